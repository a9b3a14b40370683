"""Row-wise softmax of a (512, 512) fp32 tensor, 128 rows per tile."""

import nki
import nki.isa as nisa  # noqa: F401 - optimized versions use it
import nki.language as nl
import numpy as np


@nki.jit
def softmax(x):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(rows // 128):
        tile = nl.load(x[i * 128:(i + 1) * 128, :])
        row_max = nl.max(tile, axis=1, keepdims=True)
        shifted = nl.subtract(tile, row_max)
        exps = nl.exp(shifted)
        total = nl.sum(exps, axis=1, keepdims=True)
        inv = nl.reciprocal(total)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(exps, inv))
    return out


# Logits as a model produces them, not just normal(0, 1): past 88 an exp(x) without the row max overflows
# fp32, so a kernel that skips the max is incorrect here instead of passing on small test values.
INPUTS = {"x": {"shape": (512, 512), "dtype": "float32", "low": -100.0, "high": 100.0}}


def reference(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
