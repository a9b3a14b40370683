"""Element-wise addition of two (256, 2048) fp32 tensors (NKI tutorial style).

Optimize `tensor_add` with speedpatch; the harness below (INPUTS, reference) is trusted and never rewritten.
"""

import nki
import nki.language as nl


@nki.jit
def tensor_add(a, b):
    TILE_F = 128  # free-dimension tile size (elements per partition per DMA)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    for i in nl.affine_range(rows // nl.tile_size.pmax):
        for j in nl.affine_range(cols // TILE_F):
            rs = nl.ds(i * nl.tile_size.pmax, nl.tile_size.pmax)
            cs = nl.ds(j * TILE_F, TILE_F)
            a_tile = nl.load(a[rs, cs])
            b_tile = nl.load(b[rs, cs])
            nl.store(out[rs, cs], value=nl.add(a_tile, b_tile))
    return out


INPUTS = {"a": ((256, 2048), "float32"), "b": ((256, 2048), "float32")}


def reference(a, b):
    return a + b
