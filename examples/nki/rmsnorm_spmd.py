"""RMSNorm as an SPMD kernel: program i of the launch grid normalizes rows [128 i, 128 i + 128) of
x (1024, 512): out = x / sqrt(mean(x^2, axis=1) + eps) * g. The grid (GRID) and the epsilon (a non-tensor
argument in INPUTS) are part of the trusted problem: the runner launches rmsnorm_spmd[8](x, g, eps)."""

import nki
import nki.language as nl
import numpy as np


@nki.jit
def rmsnorm_spmd(x, g, eps):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    x_tile = nl.load(x[i * 128 + i_p, i_f])
    g_tile = nl.load(g[i_p * 0, i_f])  # the weight row, broadcast to 128 partitions by the DMA
    total = nl.sum(nl.square(x_tile), axis=1, keepdims=True)
    rstd = nl.rsqrt(nl.add(nl.multiply(total, 1.0 / cols), eps))
    nl.store(out[i * 128 + i_p, i_f], value=nl.multiply(nl.multiply(x_tile, rstd), g_tile))
    return out


INPUTS = {
    "x": ((1024, 512), "float32"),
    "g": {"shape": (1, 512), "dtype": "float32", "low": 0.5, "high": 1.5},
    "eps": 1e-6,
}
GRID = (8,)  # one program per 128 rows


def reference(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * g
