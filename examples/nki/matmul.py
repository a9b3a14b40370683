"""Basic matrix multiplication result = lhsT.T @ rhs (NKI tutorial style, first version).

lhsT is the left operand already transposed (K, M), as the Tensor engine wants its stationary operand.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul(lhsT, rhs):
    TILE_M = 128  # stationary free size (<= 128)
    TILE_K = 128  # contraction tile (partition dimension, <= 128)
    TILE_N = 128  # moving free size (<= 512)
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                res_psum += nisa.nc_matmul(lhsT_tile, rhs_tile)
            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res_sb)
    return result


INPUTS = {"lhsT": ((256, 256), "float32"), "rhs": ((256, 1024), "float32")}


def reference(lhsT, rhs):
    return lhsT.T @ rhs
