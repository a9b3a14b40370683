"""LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta, x (512, 512)."""

import nki
import nki.isa as nisa  # noqa: F401 - optimized versions use it
import nki.language as nl
import numpy as np


@nki.jit
def layernorm(x, gamma, beta):
    EPS = 1e-5
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for i in nl.affine_range(rows // 128):
        x_tile = nl.load(x[i * 128 + i_p, i_f])
        gamma_tile = nl.load(gamma[i_p * 0, i_f])
        beta_tile = nl.load(beta[i_p * 0, i_f])
        mean = nl.multiply(nl.sum(x_tile, axis=1, keepdims=True), 1.0 / cols)
        centered = nl.subtract(x_tile, mean)
        var = nl.multiply(nl.sum(nl.square(centered), axis=1, keepdims=True), 1.0 / cols)
        rstd = nl.rsqrt(nl.add(var, EPS))
        scaled = nl.multiply(nl.multiply(centered, rstd), gamma_tile)
        nl.store(out[i * 128 + i_p, i_f], value=nl.add(scaled, beta_tile))
    return out


INPUTS = {
    "x": ((512, 512), "float32"),
    "gamma": {"shape": (1, 512), "dtype": "float32", "low": 0.5, "high": 1.5},
    "beta": ((1, 512), "float32"),
}


def reference(x, gamma, beta):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
