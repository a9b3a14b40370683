"""RMSNorm: out = x / sqrt(mean(x^2, axis=1) + eps) * g, for x (1024, 512) and weight g (1, 512)."""

import nki
import nki.isa as nisa  # noqa: F401 - optimized versions use it
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm(x, g):
    EPS = 1e-6
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for i in nl.affine_range(rows // 128):
        x_tile = nl.load(x[i * 128 + i_p, i_f])
        g_tile = nl.load(g[i_p * 0, i_f])  # the weight row, broadcast to 128 partitions by the DMA
        squares = nl.square(x_tile)
        total = nl.sum(squares, axis=1, keepdims=True)
        mean = nl.multiply(total, 1.0 / cols)
        rstd = nl.rsqrt(nl.add(mean, EPS))
        normed = nl.multiply(x_tile, rstd)
        nl.store(out[i * 128 + i_p, i_f], value=nl.multiply(normed, g_tile))
    return out


INPUTS = {"x": ((1024, 512), "float32"), "g": {"shape": (1, 512), "dtype": "float32", "low": 0.5, "high": 1.5}}


def reference(x, g):
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6) * g
