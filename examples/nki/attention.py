"""Single-head attention: out = softmax(q.T @ k / sqrt(d)) @ v, with q and k given transposed (d, S).

Shapes: q, k (128, 512) = (head_dim, seq); v (512, 128) = (seq, head_dim); out (512, 128).
"""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def attention(q, k, v):
    d, seq = q.shape
    scale = 1.0 / np.sqrt(d)
    out = nl.ndarray((seq, d), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(seq // 128):
        q_tile = nl.load(q[:, i * 128:(i + 1) * 128])  # (d, 128 queries): stationary
        k_all = nl.load(k[:, :])  # (d, seq keys): moving
        scores = nisa.nc_matmul(q_tile, k_all)  # (128 queries, seq) in PSUM
        scaled = nl.multiply(scores, scale)
        row_max = nl.max(scaled, axis=1, keepdims=True)
        probs = nl.exp(nl.subtract(scaled, row_max))
        denom = nl.sum(probs, axis=1, keepdims=True)
        acc = nl.zeros((128, d), nl.float32, buffer=nl.psum)
        for j in nl.affine_range(seq // 128):
            probs_t = nisa.nc_transpose(probs[:, j * 128:(j + 1) * 128])  # (128 keys, 128 queries)
            probs_t_sb = nl.copy(probs_t)
            v_tile = nl.load(v[j * 128:(j + 1) * 128, :])
            acc += nisa.nc_matmul(probs_t_sb, v_tile)
        result = nl.multiply(acc, nl.reciprocal(denom))
        nl.store(out[i * 128:(i + 1) * 128, :], value=result)
    return out


# q and k wide enough that scores reach past 88 (std ~48): a softmax without the row max overflows fp32,
# so a kernel that skips it is incorrect here instead of passing on small test values.
INPUTS = {"q": {"shape": (128, 512), "dtype": "float32", "low": -12.0, "high": 12.0},
          "k": {"shape": (128, 512), "dtype": "float32", "low": -12.0, "high": 12.0},
          "v": ((512, 128), "float32")}


def reference(q, k, v):
    s = (q.T @ k) / np.sqrt(q.shape[0])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v
