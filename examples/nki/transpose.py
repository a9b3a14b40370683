"""2-D transpose out = x.T of a (256, 1024) fp32 tensor through the Tensor engine (nc_transpose)."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def transpose(x):
    TILE_F = 128  # columns loaded per DMA (a multiple of 128)
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(rows // 128):
        for j in nl.affine_range(cols // TILE_F):
            block = nl.load(x[i * 128:(i + 1) * 128, j * TILE_F:(j + 1) * TILE_F])
            for t in nl.affine_range(TILE_F // 128):
                flipped = nisa.nc_transpose(block[:, t * 128:(t + 1) * 128])
                flipped_sb = nl.copy(flipped, dtype=x.dtype)
                col0 = j * TILE_F + t * 128
                nl.store(out[col0:col0 + 128, i * 128:(i + 1) * 128], value=flipped_sb)
    return out


INPUTS = {"x": ((256, 1024), "float32")}


def reference(x):
    return np.ascontiguousarray(x.T)
