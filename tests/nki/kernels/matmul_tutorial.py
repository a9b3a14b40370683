"""The four versions of the NKI matrix-multiplication tutorial ("Matrix multiplication" under NKI
tutorials, AWS Neuron documentation), written here against the emulator, following the structure the
tutorial documents for each step:

1. tiled:        for each (m, n) output tile, loop over K and load both operand tiles every time;
2. hoisted:      load a whole column of lhsT tiles once per m, and the rhs column once per (m, n);
3. block_free:   block the free dimensions (2 tiles of M x 2 tiles of N) so a loaded block serves
                 several output tiles;
4. optimized:    block all three dimensions (M by 16 tiles, N by 2, K by 8), accumulate K blocks in an
                 SBUF result block (sequential over K), load wide rows, and store coalesced result rows.

Published trn1 latencies for bf16 [4096, 8192] @ [8192, 8192] (K=8192, M=4096, N=8192):
51.80, 42.96, 22.07 and 6.97 ms. Every kernel computes lhsT.T @ rhs; lhsT is (K, M), rhs is (K, N).
"""

from __future__ import annotations

from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.jit import jit

PUBLISHED_MS = {"tiled": 51.80, "hoisted": 42.96, "block_free": 22.07, "optimized": 6.97}
PUBLISHED_SHAPE = {"K": 8192, "M": 4096, "N": 8192}

P = 128  # partition tile (contraction tile and stationary free size)
F = 512  # moving free size (one PSUM bank of fp32)


@jit
def tiled(lhsT, rhs):
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(m_size // P):
        for ni in nl.affine_range(n_size // F):
            acc = nl.zeros((P, F), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(k_size // P):
                a = nl.ndarray((P, P), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((P, F), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhsT[ki * P:(ki + 1) * P, mi * P:(mi + 1) * P])
                b[...] = nl.load(rhs[ki * P:(ki + 1) * P, ni * F:(ni + 1) * F])
                acc += nl.matmul(a[...], b[...], transpose_x=True)
            res = nl.copy(acc, dtype=out.dtype)
            nl.store(out[mi * P:(mi + 1) * P, ni * F:(ni + 1) * F], value=res)
    return out


@jit
def hoisted(lhsT, rhs):
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    kt = k_size // P
    out = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    ip, ia = nl.mgrid[0:P, 0:P]
    _, ib = nl.mgrid[0:P, 0:F]
    for mi in nl.affine_range(m_size // P):
        # as in the tutorial, the lhsT column is held in (P, 512)-wide tiles of which P columns are used
        a_col = nl.ndarray((kt, nl.par_dim(P), F), dtype=lhsT.dtype, buffer=nl.sbuf)
        for ki in nl.affine_range(kt):
            a_col[ki, ip, ia] = nl.load(lhsT[ki * P + ip, mi * P + ia])
        for ni in nl.affine_range(n_size // F):
            b_col = nl.ndarray((kt, nl.par_dim(P), F), dtype=rhs.dtype, buffer=nl.sbuf)
            for ki in nl.affine_range(kt):
                b_col[ki, ip, ib] = nl.load(rhs[ki * P + ip, ni * F + ib])
            acc = nl.zeros((P, F), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(kt):
                acc[...] += nl.matmul(a_col[ki, ip, ia], b_col[ki, ip, ib], transpose_x=True)
            res = nl.copy(acc, dtype=out.dtype)
            nl.store(out[mi * P + ip, ni * F + ib], value=res)
    return out


@jit
def block_free(lhsT, rhs, tiles_m: int = 2, tiles_n: int = 2):
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    kt = k_size // P
    block_m, block_n = P * tiles_m, F * tiles_n
    out = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    ip, ia = nl.mgrid[0:P, 0:P]
    _, ib = nl.mgrid[0:P, 0:F]
    for mb in nl.affine_range(m_size // block_m):
        a_blk = nl.ndarray((tiles_m, kt, nl.par_dim(P), P), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(tiles_m):
            for ki in nl.affine_range(kt):
                a_blk[bm, ki, ip, ia] = nl.load(lhsT[ki * P + ip, (mb * tiles_m + bm) * P + ia])
        for nb in nl.affine_range(n_size // block_n):
            b_blk = nl.ndarray((tiles_n, kt, nl.par_dim(P), F), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(tiles_n):
                for ki in nl.affine_range(kt):
                    b_blk[bn, ki, ip, ib] = nl.load(rhs[ki * P + ip, (nb * tiles_n + bn) * F + ib])
            for bm in nl.affine_range(tiles_m):
                for bn in nl.affine_range(tiles_n):
                    acc = nl.zeros((P, F), nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(kt):
                        acc += nl.matmul(a_blk[bm, ki, ip, ia], b_blk[bn, ki, ip, ib], transpose_x=True)
                    res = nl.copy(acc, dtype=out.dtype)
                    nl.store(out[(mb * tiles_m + bm) * P + ip, (nb * tiles_n + bn) * F + ib], value=res)
    return out


@jit
def optimized(lhsT, rhs, tiles_m: int = 16, tiles_n: int = 2, tiles_k: int = 8):
    k_size, m_size = lhsT.shape
    n_size = rhs.shape[1]
    block_m, block_n, block_k = P * tiles_m, F * tiles_n, P * tiles_k
    blocks_m = m_size // block_m
    out = nl.ndarray((m_size, n_size), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for nb in nl.affine_range(n_size // block_n):
        # the output block of this N block, accumulated over the K blocks in SBUF
        acc_sb = nl.zeros((blocks_m, tiles_m, tiles_n, nl.par_dim(P), F), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(k_size // block_k):
            ip, ib = nl.mgrid[0:P, 0:block_n]
            b_blk = nl.ndarray((tiles_k, nl.par_dim(P), block_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(tiles_k):
                b_blk[bk, ip, ib] = nl.load(rhs[(kb * tiles_k + bk) * P + ip, nb * block_n + ib])
            for mb in nl.affine_range(blocks_m):
                jp, ja = nl.mgrid[0:P, 0:block_m]
                a_blk = nl.ndarray((tiles_k, nl.par_dim(P), block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(tiles_k):
                    a_blk[bk, jp, ja] = nl.load(lhsT[(kb * tiles_k + bk) * P + jp, mb * block_m + ja])
                sp, sa = nl.mgrid[0:P, 0:P]
                _, sb = nl.mgrid[0:P, 0:F]
                for bn in nl.affine_range(tiles_n):
                    for bm in nl.affine_range(tiles_m):
                        part = nl.zeros((P, F), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(tiles_k):
                            part[...] += nisa.nc_matmul(a_blk[bk, sp, bm * P + sa], b_blk[bk, sp, bn * F + sb])
                        acc_sb[mb, bm, bn, sp, sb] += part[sp, sb]
        for mb in nl.affine_range(blocks_m):
            for bm in nl.affine_range(tiles_m):
                rp, rf = nl.mgrid[0:P, 0:F]
                _, rw = nl.mgrid[0:P, 0:block_n]
                row = nl.ndarray((P, block_n), dtype=acc_sb.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(tiles_n):
                    row[rp, bn * F + rf] = nl.copy(acc_sb[mb, bm, bn, rp, rf])
                nl.store(out[(mb * tiles_m + bm) * P + rp, nb * block_n + rw], value=row[rp, rw])
    return out


KERNELS = {"tiled": tiled, "hoisted": hoisted, "block_free": block_free, "optimized": optimized}
