"""The hardware loops (LOOP_WS, LOOP_CONV_WS) against numpy references."""

from __future__ import annotations

import numpy as np
import pytest
from test_model_isa import (
    LOOP_CONV_WS,
    WS,
    Script,
    config_ex,
    config_ld,
    config_st,
    loop_ws,
    parse_reads,
    relu,
    scale_round_saturate,
    tiles,
)


def _matmul_script(A, B, D, act, scale, a_t=False, full_c=False):
    n_i, n_k = A.shape
    n_j = B.shape[1]
    (ti, pi), (tj, pj), (tk, pk) = tiles(n_i), tiles(n_j), tiles(n_k)
    s = Script(size=4 << 20)
    a_stored = np.ascontiguousarray(A.T) if a_t else A
    pa, pb = s.put(a_stored), s.put(B)
    pd = s.put(D) if D is not None else 0
    c_size = 4 if full_c else 1
    pc = s.alloc(n_i * n_j * c_size)
    s.issue(config_ex(WS, a_t=int(a_t)))
    s.issue(config_st(n_j * c_size, act=act, scale=scale))
    s.issue(config_ld(a_stored.shape[1], slot=0))
    s.issue(config_ld(n_j, slot=1))
    s.issue(config_ld(n_j * 4, slot=2))
    loop_ws(s, ti, tj, tk, pi, pj, pk, pa, pb, pd, pc, a_stored.shape[1], n_j, n_j, n_j,
            a_t=int(a_t), full_C=int(full_c), ex_accumulate=int(D is not None), act=act)
    s.fence()
    s.read(pc, n_i * n_j * c_size)
    return s


@pytest.mark.parametrize(
    "seed,n_i,n_j,n_k,with_d,act,scale,a_t",
    [
        (0, 16, 16, 16, False, 0, 1.0, False),
        (1, 37, 50, 29, True, 1, 0.01, False),
        (2, 64, 33, 70, True, 0, 0.003, False),
        (3, 20, 40, 24, False, 1, 0.02, True),
    ],
)
def test_loop_ws_computes_the_tiled_matmul(gemmini_driver, seed, n_i, n_j, n_k, with_d, act, scale, a_t):
    rng = np.random.default_rng(seed)
    A = rng.integers(-128, 128, (n_i, n_k), dtype=np.int8)
    B = rng.integers(-128, 128, (n_k, n_j), dtype=np.int8)
    D = rng.integers(-5000, 5000, (n_i, n_j), dtype=np.int32) if with_d else None
    res = gemmini_driver(_matmul_script(A, B, D, act, scale, a_t=a_t).text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int8).reshape(n_i, n_j)
    total = A.astype(np.int64) @ B + (D if with_d else 0)
    assert (got == relu(scale_round_saturate(total, scale), act)).all()
    assert res.stats["macs"] == n_i * n_j * n_k
    assert res.stats["instructions"]["LOOP_WS"] == 1
    executed = res.stats["executed_instructions"]
    ti, tj, tk = tiles(n_i)[0], tiles(n_j)[0], tiles(n_k)[0]
    assert executed["COMPUTE_PRELOADED"] == tj * tk  # new weights once per (k, j) tile of B
    assert executed["COMPUTE_PRELOADED"] + executed.get("COMPUTE_ACCUMULATE", 0) == ti * tj * tk


def test_loop_ws_full_width_output_returns_int32(gemmini_driver):
    rng = np.random.default_rng(9)
    A = rng.integers(-128, 128, (24, 40), dtype=np.int8)
    B = rng.integers(-128, 128, (40, 18), dtype=np.int8)
    res = gemmini_driver(_matmul_script(A, B, None, 0, 1.0, full_c=True).text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int32).reshape(24, 18)
    assert (got == A.astype(np.int64) @ B).all()


def test_loop_ws_bounds_beyond_double_buffering_are_an_error(gemmini_driver):
    s = Script()
    loop_ws(s, 40, 40, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    res = gemmini_driver(s.text())
    assert res.returncode == 3
    assert "too large for double-buffering" in res.output and "inside LOOP_WS (instruction #6" in res.output


def _conv_reference(inp, w, bias, stride, pad, act, scale):
    batch, rows, cols, _ = inp.shape
    kdim, _, _, och = w.shape
    orows = (rows + 2 * pad - kdim) // stride + 1
    ocols = (cols + 2 * pad - kdim) // stride + 1
    padded = np.zeros((batch, rows + 2 * pad, cols + 2 * pad, inp.shape[3]), np.int64)
    padded[:, pad : pad + rows, pad : pad + cols] = inp
    out = np.zeros((batch, orows, ocols, och), np.int64) + bias
    for kr in range(kdim):
        for kc in range(kdim):
            patch = padded[:, kr : kr + stride * orows : stride, kc : kc + stride * ocols : stride]
            out += patch @ w[kr, kc].astype(np.int64)
    return relu(scale_round_saturate(out, scale), act)


def _conv_loop(s, pin, pw, pbias, pout, batch, size, in_ch, out_ch, kdim, stride, pad, act, scale):
    """One LOOP_CONV_WS over the whole problem (0 for a pointer: the loop skips that operand)."""
    out_dim = (size + 2 * pad - kdim) // stride + 1
    s.issue(config_ex(WS, a_stride=stride))  # consecutive output pixels read input rows `stride` apart
    s.issue(config_st(out_ch, act=act, scale=scale))
    # CONFIG_1..6 exactly as the library packs them (field layout of the loop's configuration).
    s.rocc(16, (out_ch << 48) | (in_ch << 32) | (size << 16) | batch,
           (pad << 56) | (stride << 48) | (out_dim << 32) | (out_dim << 16) | out_dim)
    s.rocc(17, (kdim << 48) | (out_dim << 32), (batch << 48) | (out_dim << 32) | (out_dim << 16) | out_ch)
    # The loop reads out_dim*stride + kdim - 1 input rows/cols including padding; the far-side padding
    # makes up whatever the image does not have (as the library computes it).
    far = out_dim * stride + kdim - 1 - size - pad
    s.rocc(18, (kdim << 48) | (kdim << 32) | (in_ch << 16) | pad, (far << 48) | (pad << 32) | (far << 24) | size)
    s.rocc(19, (out_dim << 48) | 1, (in_ch << 48) | (out_ch << 32) | (out_ch << 16) | out_dim)
    s.rocc(20, pw, pout)
    s.rocc(21, pbias, pin)
    s.rocc(LOOP_CONV_WS, 0, (act << 3) | 1)  # no pooling
    s.fence()


@pytest.mark.parametrize("seed,batch,size,in_ch,out_ch,kdim,stride,pad",
                         [(0, 1, 8, 5, 20, 3, 1, 1), (1, 2, 9, 17, 16, 3, 2, 1), (2, 1, 6, 3, 8, 1, 1, 0)])
def test_loop_conv_ws_computes_the_convolution(gemmini_driver, seed, batch, size, in_ch, out_ch, kdim, stride, pad):
    rng = np.random.default_rng(seed)
    act, scale = 1, 0.05
    inp = rng.integers(-128, 128, (batch, size, size, in_ch), dtype=np.int8)
    w = rng.integers(-128, 128, (kdim, kdim, in_ch, out_ch), dtype=np.int8)
    bias = rng.integers(-2000, 2000, (out_ch,), dtype=np.int32)
    out_dim = (size + 2 * pad - kdim) // stride + 1
    s = Script(size=4 << 20)
    pin, pw, pbias = s.put(inp), s.put(w), s.put(bias)
    pout = s.alloc(batch * out_dim * out_dim * out_ch)
    _conv_loop(s, pin, pw, pbias, pout, batch, size, in_ch, out_ch, kdim, stride, pad, act, scale)
    s.read(pout, batch * out_dim * out_dim * out_ch)
    res = gemmini_driver(s.text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int8).reshape(batch, out_dim, out_dim, out_ch)
    assert (got == _conv_reference(inp, w, bias, stride, pad, act, scale)).all()
    assert res.stats["instructions"]["LOOP_CONV_WS"] == 1


def test_a_conv_loop_computes_nothing_before_it_has_issued_all_its_loads(gemmini_driver):
    # LoopConvExecute issues only once the loop's input and weight loaders are done (LoopConv.scala ld_ahead),
    # unlike LOOP_WS, which gates tile by tile. 16x16x64 input, 3x3x64x64 weights: 52 KiB, cold, so it
    # comes from DRAM at 8 bytes a cycle: 6,656 cycles, against 36,864 cycles of computes. Gated, moving the
    # operands adds all of that less what the last T_LOAD_QUEUE (8) 1 KiB mvins still had in flight
    # (8 x 128 cycles); overlapped, it would add little more than the input's time (3,504 when ungated).
    batch, size, in_ch, out_ch, kdim = 1, 16, 64, 64, 3
    rng = np.random.default_rng(5)
    inp = rng.integers(-128, 128, (batch, size, size, in_ch), dtype=np.int8)
    w = rng.integers(-128, 128, (kdim, kdim, in_ch, out_ch), dtype=np.int8)

    def done(with_operands: bool) -> int:
        s = Script(size=4 << 20)
        pin, pw = s.put(inp), s.put(w)
        pout = s.alloc(batch * size * size * out_ch)
        _conv_loop(s, pin if with_operands else 0, pw if with_operands else 0, 0, pout,
                   batch, size, in_ch, out_ch, kdim, 1, 1, 0, 1.0)
        res = gemmini_driver(s.text())
        assert res.returncode == 0, res.output
        return res.stats["accelerator_done_cycle"]

    dram_cycles = (inp.nbytes + w.nbytes) // 8
    assert done(True) - done(False) >= dram_cycles - 8 * 1024 // 8


def test_loop_conv_ws_with_pooling_writes_the_max_pooled_output(gemmini_driver):
    rng = np.random.default_rng(12)
    batch, size, in_ch, out_ch, kdim, stride, pad = 1, 8, 4, 16, 3, 1, 1
    pool, pool_stride, act, scale = 2, 2, 1, 0.05
    out_dim = (size + 2 * pad - kdim) // stride + 1
    pooled = (out_dim - pool) // pool_stride + 1
    inp = rng.integers(-128, 128, (batch, size, size, in_ch), dtype=np.int8)
    w = rng.integers(-128, 128, (kdim, kdim, in_ch, out_ch), dtype=np.int8)
    bias = rng.integers(-2000, 2000, (out_ch,), dtype=np.int32)
    s = Script(size=4 << 20)
    pin, pw, pbias = s.put(inp), s.put(w), s.put(bias)
    pout = s.alloc(batch * pooled * pooled * out_ch)
    s.issue(config_ex(WS, a_stride=stride))
    s.issue(config_st(out_ch, act=act, scale=scale))
    far = out_dim * stride + kdim - 1 - size - pad
    s.rocc(16, (out_ch << 48) | (in_ch << 32) | (size << 16) | batch,
           (pad << 56) | (stride << 48) | (out_dim << 32) | (pooled << 16) | out_dim)
    s.rocc(17, (kdim << 48) | (pooled << 32) | (pool << 16) | (pool_stride << 8),
           (batch << 48) | (pooled << 32) | (pooled << 16) | out_ch)
    s.rocc(18, (kdim << 48) | (kdim << 32) | (in_ch << 16) | pad, (far << 48) | (pad << 32) | (far << 24) | size)
    s.rocc(19, (out_dim << 48) | 1, (in_ch << 48) | (out_ch << 32) | (out_ch << 16) | out_dim)
    s.rocc(20, pw, pout)
    s.rocc(21, pbias, pin)
    s.rocc(LOOP_CONV_WS, 0, act << 3)  # pooling on (no_pool = 0)
    s.fence()
    s.read(pout, batch * pooled * pooled * out_ch)
    res = gemmini_driver(s.text())
    assert res.returncode == 0, res.output
    got = np.frombuffer(parse_reads(res.output)[0], np.int8).reshape(batch, pooled, pooled, out_ch)
    conv = _conv_reference(inp, w, bias, stride, pad, act, scale)
    expected = np.full((batch, pooled, pooled, out_ch), -128, np.int64)
    for wr in range(pool):
        for wc in range(pool):
            window = conv[:, wr : wr + pool_stride * pooled : pool_stride, wc : wc + pool_stride * pooled : pool_stride]
            expected = np.maximum(expected, window)
    assert (got == expected).all()
