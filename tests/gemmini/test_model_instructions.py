"""Per-instruction semantics of the native Gemmini model against a numpy reference."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_model_isa import (
    ACC,
    ACCUMULATE,
    COMPUTE_ACCUMULATE,
    COMPUTE_PRELOADED,
    DIM,
    FULL,
    GARBAGE,
    MVIN,
    MVIN2,
    MVOUT,
    OS,
    PRELOAD,
    WS,
    Dram,
    Script,
    config_ex,
    config_ld,
    config_st,
    f32_bits,
    operand,
    parse_reads,
    relu,
    rounding_shift,
    scale_round_saturate,
)

ERROR_LINE = re.compile(
    r"^gemmini-model: error: .+ \(instruction #(\d+) funct=(\d+) rs1=0x[0-9a-f]+ rs2=0x[0-9a-f]+\)$", re.M
)


def run_ok(driver, script: Script) -> list[bytes]:
    res = driver(script.text())
    assert res.returncode == 0, res.output
    return parse_reads(res.output)


def int8(data: bytes, rows: int, stride: int) -> np.ndarray:
    return np.frombuffer(data, np.int8).reshape(rows, stride).astype(np.int64)


# ---- data movement ---------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_mvin_then_mvout_returns_the_same_rows_with_any_strides(gemmini_driver, seed):
    rng = np.random.default_rng(seed)
    rows, cols = (int(v) for v in rng.integers(1, DIM + 1, 2))
    ld_stride, st_stride = cols + int(rng.integers(0, 20)), cols + int(rng.integers(0, 9))
    src = rng.integers(-128, 128, (rows, ld_stride), dtype=np.int8)
    s = Script()
    a, out = s.put(src), s.alloc(rows * st_stride)
    local = int(rng.integers(0, 4 * 4096 - DIM))
    s.issue(config_ld(ld_stride))
    s.issue(config_st(st_stride))
    s.rocc(MVIN, a, operand(local, cols, rows))
    s.rocc(MVOUT, out, operand(local, cols, rows))
    s.fence()
    s.read(out, rows * st_stride)
    got = int8(run_ok(gemmini_driver, s)[0], rows, st_stride)[:, :cols]
    assert (got == src[:, :cols]).all()


def test_mvin_scale_rounds_ties_to_even_and_saturates_both_ends(gemmini_driver):
    values = np.array([1, 3, 5, -1, -3, -5, 7, -7, 127, -128, 100, -100, 60, -60, 0, 2], dtype=np.int8)
    s = Script()
    a = s.put(values.reshape(1, DIM))
    outs = []
    for slot, (funct, scale) in enumerate([(MVIN, 0.5), (MVIN2, 2.5)]):
        s.issue(config_ld(DIM, scale=scale, slot=slot))
        s.rocc(funct, a, operand(slot * DIM, DIM, 1))
    s.issue(config_st(DIM))
    for slot in range(2):
        out = s.alloc(DIM)
        s.rocc(MVOUT, out, operand(slot * DIM, DIM, 1))
        s.read(out, DIM)
        outs.append(out)
    halves, scaled = (np.frombuffer(r, np.int8).astype(np.int64) for r in run_ok(gemmini_driver, s))
    assert list(halves[:6]) == [0, 2, 2, 0, -2, -2]  # 0.5, 1.5, 2.5 and their negatives: ties to even
    assert (halves == scale_round_saturate(values, 0.5)).all()
    assert scaled[8] == 127 and scaled[9] == -128 and scaled[12] == 127 and scaled[13] == -128
    assert (scaled == scale_round_saturate(values, 2.5)).all()


def test_wide_mvin_places_each_block_of_dim_columns_block_stride_rows_apart(gemmini_driver):
    rng = np.random.default_rng(7)
    rows, cols, block_stride = 5, 40, 20
    src = rng.integers(-128, 128, (rows, cols), dtype=np.int8)
    s = Script()
    a = s.put(src)
    s.issue(config_ld(cols, block_stride=block_stride))
    s.issue(config_st(DIM))
    s.rocc(MVIN, a, operand(100, cols, rows))
    outs = []
    for b in range(3):
        out = s.alloc(rows * DIM)
        s.rocc(MVOUT, out, operand(100 + b * block_stride, DIM, rows))
        s.read(out, rows * DIM)
        outs.append(out)
    reads = run_ok(gemmini_driver, s)
    for b in range(3):
        got = int8(reads[b], rows, DIM)
        width = min(DIM, cols - b * DIM)
        assert (got[:, :width] == src[:, b * DIM : b * DIM + width]).all()


def test_accumulator_mvin_can_accumulate_and_full_width_mvout_returns_int32(gemmini_driver):
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**31), 2**31, (8, DIM), dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, (8, DIM), dtype=np.int64).astype(np.int32)
    s = Script()
    ax, ay, out = s.put(x), s.put(y), s.alloc(8 * DIM * 4)
    s.issue(config_ld(DIM * 4))
    s.issue(config_st(DIM * 4))
    s.rocc(MVIN, ax, operand(ACC | 40, DIM, 8))
    s.rocc(MVIN, ay, operand(ACC | ACCUMULATE | 40, DIM, 8))
    s.rocc(MVOUT, out, operand(ACC | FULL | 40, DIM, 8))
    s.read(out, 8 * DIM * 4)
    got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(8, DIM)
    assert (got == (x.astype(np.int64) + y).astype(np.int32)).all()  # int32 wrap-around, like hardware


def test_shrunk_mvin_scales_int8_into_the_accumulator(gemmini_driver):
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (4, DIM), dtype=np.int8)
    s = Script()
    a, out = s.put(x), s.alloc(4 * DIM * 4)
    s.issue(config_ld(DIM, scale=0.75, shrunk=1))
    s.issue(config_st(DIM * 4))
    s.rocc(MVIN, a, operand(ACC | 0, DIM, 4))
    s.rocc(MVOUT, out, operand(ACC | FULL | 0, DIM, 4))
    s.read(out, 4 * DIM * 4)
    got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(4, DIM)
    assert (got == scale_round_saturate(x, 0.75)).all()


@pytest.mark.parametrize("act,scale", [(0, 0.5), (1, 0.5), (0, 0.0123), (1, 3.0)])
def test_accumulator_mvout_scales_rounds_saturates_then_applies_relu(gemmini_driver, act, scale):
    rng = np.random.default_rng(int(scale * 1000) + act)
    x = rng.integers(-3000, 3000, (DIM, DIM), dtype=np.int32)
    x[0, :8] = [1, 3, 5, -1, -3, -5, 255, -255]  # ties at scale 0.5
    s = Script()
    a, out = s.put(x), s.alloc(DIM * DIM)
    s.issue(config_ld(DIM * 4))
    s.issue(config_st(DIM, act=act, scale=scale))
    s.rocc(MVIN, a, operand(ACC | 16, DIM, DIM))
    s.rocc(MVOUT, out, operand(ACC | 16, DIM, DIM))
    s.read(out, DIM * DIM)
    got = int8(run_ok(gemmini_driver, s)[0], DIM, DIM)
    assert (got == relu(scale_round_saturate(x, scale), act)).all()


# ---- execute ---------------------------------------------------------------------------------------

WS_CASES = [
    # (seed, to_acc, accumulate, with_d, a_t, b_t, act)
    (0, True, False, False, 0, 0, 0),
    (1, True, True, True, 0, 0, 0),
    (2, False, False, True, 0, 0, 1),
    (3, False, False, False, 1, 0, 0),
    (4, True, False, True, 0, 1, 0),
    (5, False, False, True, 0, 1, 1),
]


@pytest.mark.parametrize("seed,to_acc,accumulate,with_d,a_t,b_t,act", WS_CASES)
def test_weight_stationary_compute_matches_reference(gemmini_driver, seed, to_acc, accumulate, with_d, a_t, b_t, act):
    rng = np.random.default_rng(seed)
    I, J, K = (int(v) for v in rng.integers(1, DIM + 1, 3))  # noqa: E741 (matmul dimension names)
    A = rng.integers(-128, 128, (I, K), dtype=np.int8)
    B = rng.integers(-128, 128, (K, J), dtype=np.int8)
    D = rng.integers(-128, 128, (I, J), dtype=np.int8)
    init = rng.integers(-(10**6), 10**6, (I, J), dtype=np.int32)
    s = Script()
    a_stored, b_stored = (A.T if a_t else A), (B.T if b_t else B)
    pa, pb, pd, pinit = s.put(a_stored), s.put(b_stored), s.put(D), s.put(init)
    s.issue(config_ex(WS, act=act, a_t=a_t, b_t=b_t))
    s.issue(config_ld(a_stored.shape[1], slot=0))
    s.issue(config_ld(b_stored.shape[1], slot=1))
    s.issue(config_ld(J, slot=2))
    s.rocc(MVIN, pa, operand(0, a_stored.shape[1], a_stored.shape[0]))
    s.rocc(MVIN2, pb, operand(64, b_stored.shape[1], b_stored.shape[0]))
    s.rocc(14, pd, operand(128, J, I))
    if to_acc:
        s.issue(config_ld(J * 4, slot=0))
        s.rocc(MVIN, pinit, operand(ACC | 200, J, I))
        c_addr = ACC | (ACCUMULATE if accumulate else 0) | 200
    else:
        c_addr = 300
    s.rocc(PRELOAD, operand(64, J, K), operand(c_addr, J, I))
    s.rocc(COMPUTE_PRELOADED, operand(0, K, I), operand(128, J, I) if with_d else operand(GARBAGE, DIM, DIM))
    expected = A.astype(np.int64) @ B + (D if with_d else 0)
    if to_acc:
        out = s.alloc(I * J * 4)
        s.issue(config_st(J * 4))
        s.rocc(MVOUT, out, operand(ACC | FULL | 200, J, I))
        s.read(out, I * J * 4)
        got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(I, J)
        assert (got == (expected + (init if accumulate else 0)).astype(np.int32)).all()
    else:
        out = s.alloc(I * J)
        s.issue(config_st(J))
        s.rocc(MVOUT, out, operand(300, J, I))
        s.read(out, I * J)
        got = int8(run_ok(gemmini_driver, s)[0], I, J)
        assert (got == relu(np.clip(expected, -128, 127), act)).all()


def test_compute_accumulated_reuses_the_preloaded_weights(gemmini_driver):
    rng = np.random.default_rng(11)
    A1, A2, B = (rng.integers(-128, 128, (DIM, DIM), dtype=np.int8) for _ in range(3))
    s = Script()
    p1, p2, pb, out = s.put(A1), s.put(A2), s.put(B), s.alloc(2 * DIM * DIM * 4)
    s.issue(config_ex(WS))
    s.issue(config_ld(DIM))
    s.issue(config_st(DIM * 4))
    s.rocc(MVIN, p1, operand(0, DIM, DIM))
    s.rocc(MVIN, p2, operand(DIM, DIM, DIM))
    s.rocc(MVIN, pb, operand(2 * DIM, DIM, DIM))
    s.rocc(PRELOAD, operand(2 * DIM, DIM, DIM), operand(ACC | 0, DIM, DIM))
    s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.rocc(PRELOAD, operand(GARBAGE, DIM, DIM), operand(ACC | DIM, DIM, DIM))
    s.rocc(COMPUTE_ACCUMULATE, operand(DIM, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.rocc(MVOUT, out, operand(ACC | FULL | 0, DIM, 2 * DIM))
    s.read(out, 2 * DIM * DIM * 4)
    got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(2 * DIM, DIM)
    assert (got[:DIM] == A1.astype(np.int64) @ B).all()
    assert (got[DIM:] == A2.astype(np.int64) @ B).all()


@pytest.mark.parametrize("seed,shift,act,a_t,b_t", [(0, 0, 0, 0, 0), (1, 7, 0, 0, 0), (2, 9, 1, 1, 0), (3, 5, 0, 1, 1)])
def test_output_stationary_accumulates_in_the_array_then_shifts_rounds_and_saturates(gemmini_driver, seed, shift, act, a_t, b_t):
    rng = np.random.default_rng(100 + seed)
    A1, A2, B1, B2, D = (rng.integers(-128, 128, (DIM, DIM), dtype=np.int8) for _ in range(5))
    s = Script()
    st = {name: s.put(m.T if ((name[0] == "A" and a_t) or (name[0] == "B" and b_t)) else m)
          for name, m in [("A1", A1), ("A2", A2), ("B1", B1), ("B2", B2), ("D", D)]}
    out = s.alloc(DIM * DIM)
    s.issue(config_ex(OS, act=act, shift=shift, a_t=a_t, b_t=b_t))
    s.issue(config_ld(DIM))
    s.issue(config_st(DIM))
    for n, name in enumerate(["A1", "A2", "B1", "B2", "D"]):
        s.rocc(MVIN, st[name], operand(n * DIM, DIM, DIM))
    s.rocc(PRELOAD, operand(4 * DIM, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(2 * DIM, DIM, DIM))
    s.rocc(PRELOAD, operand(GARBAGE, DIM, DIM), operand(500, DIM, DIM))
    s.rocc(COMPUTE_ACCUMULATE, operand(DIM, DIM, DIM), operand(3 * DIM, DIM, DIM))
    s.rocc(MVOUT, out, operand(500, DIM, DIM))
    s.read(out, DIM * DIM)
    got = int8(run_ok(gemmini_driver, s)[0], DIM, DIM)
    total = D.astype(np.int64) + A1.astype(np.int64) @ B1 + A2.astype(np.int64) @ B2
    assert (got == relu(np.clip(rounding_shift(total, shift), -128, 127), act)).all()


def test_output_stationary_rounding_shift_ties_go_to_even_for_negative_values(gemmini_driver):
    values = np.array([-3, -1, 1, 3, 5, -5, 7, -7, 6, -6, 2, -2, 0, 127, -128, 9], dtype=np.int8)
    B = np.zeros((DIM, DIM), np.int8)
    B[0] = values
    A = np.zeros((DIM, DIM), np.int8)
    A[:, 0] = 1  # every output row is B's first row
    s = Script()
    pa, pb, out = s.put(A), s.put(B), s.alloc(DIM * DIM)
    s.issue(config_ex(OS, shift=1))
    s.issue(config_ld(DIM))
    s.issue(config_st(DIM))
    s.rocc(MVIN, pa, operand(0, DIM, DIM))
    s.rocc(MVIN, pb, operand(DIM, DIM, DIM))
    s.rocc(PRELOAD, operand(GARBAGE, DIM, DIM), operand(64, DIM, DIM))
    s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(DIM, DIM, DIM))
    s.rocc(MVOUT, out, operand(64, DIM, DIM))
    s.read(out, DIM * DIM)
    got = int8(run_ok(gemmini_driver, s)[0], DIM, DIM)[0]
    # -1.5 -> -2, -0.5 -> 0, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2, 3.5 -> 4, -3.5 -> -4
    assert list(got[:8]) == [-2, 0, 0, 2, 2, -2, 4, -4]
    assert (got == rounding_shift(values, 1)).all()


def test_garbage_output_address_writes_nothing(gemmini_driver):
    rng = np.random.default_rng(5)
    A, B = (rng.integers(-128, 128, (DIM, DIM), dtype=np.int8) for _ in range(2))
    before = rng.integers(-1000, 1000, (DIM, DIM), dtype=np.int32)
    s = Script()
    pa, pb, pbefore, out = s.put(A), s.put(B), s.put(before), s.alloc(DIM * DIM * 4)
    s.issue(config_ex(WS))
    s.issue(config_ld(DIM))
    s.issue(config_st(DIM * 4))
    s.rocc(MVIN, pa, operand(0, DIM, DIM))
    s.rocc(MVIN, pb, operand(DIM, DIM, DIM))
    s.issue(config_ld(DIM * 4))
    s.rocc(MVIN, pbefore, operand(ACC | 0, DIM, DIM))
    s.rocc(PRELOAD, operand(DIM, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.rocc(MVOUT, out, operand(ACC | FULL | 0, DIM, DIM))
    s.read(out, DIM * DIM * 4)
    got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(DIM, DIM)
    assert (got == before).all()


# ---- illegal use: one clear line, exit status 3 --------------------------------------------------------

def _script_error(build) -> Script:
    s = Script()
    s.issue(config_ld(DIM))
    build(s)
    return s


ILLEGAL = {
    "scratchpad row out of range": (lambda s: s.rocc(MVIN, 0, operand(4 * 4096 - 4, DIM, DIM)), "out of range"),
    "accumulator row out of range": (lambda s: s.rocc(MVOUT, s.alloc(256), operand(ACC | 1020, DIM, DIM)), "out of range"),
    "OS with only B transposed": (lambda s: s.issue(config_ex(OS, b_t=1)), "illegal CONFIG_EX"),
    "WS with both transposed": (lambda s: s.issue(config_ex(WS, a_t=1, b_t=1)), "illegal CONFIG_EX"),
    "unknown funct": (lambda s: s.rocc(42, 0, 0), "unknown instruction funct=42"),
    "mvin wider than one DMA request": (lambda s: s.rocc(MVIN, 0, operand(0, 80, 1)), "exceeds one DMA request"),
    "invalid DRAM address": (lambda s: s.rocc(MVIN, 0x10, operand(0, DIM, DIM)), "invalid DRAM address"),
    "operand larger than the array": (lambda s: s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM + 1), operand(GARBAGE, DIM, DIM)), "exceeds the"),
    "mvout to address zero": (lambda s: s.rocc(MVOUT, 0, operand(0, DIM, DIM)), "DRAM address 0"),
}


@pytest.mark.parametrize("case", sorted(ILLEGAL))
def test_illegal_use_reports_one_clear_line_and_exits_3(gemmini_driver, case):
    build, expected = ILLEGAL[case]
    res = gemmini_driver(_script_error(build).text())
    assert res.returncode == 3, res.output
    found = ERROR_LINE.search(res.output)
    assert found, res.output
    assert expected in found.group(0)
    assert found.group(1) == "2"  # the config_ld was #1, the faulty instruction #2


def test_sys_shift_of_32_or_more_is_rejected(gemmini_driver):
    s = Script()
    s.issue(config_ex(OS, shift=40))
    res = gemmini_driver(s.text())
    assert res.returncode == 3 and "sys_shift 40" in res.output


# ---- less common paths -------------------------------------------------------------------------------

def test_a_stride_and_c_stride_spread_operand_and_result_rows(gemmini_driver):
    rng = np.random.default_rng(21)
    A, B = (rng.integers(-128, 128, (DIM, DIM), dtype=np.int8) for _ in range(2))
    s = Script()
    pa, pb, out = s.put(A), s.put(B), s.alloc(DIM * DIM * 4)
    s.issue(config_ex(WS, a_stride=2, c_stride=3))
    s.issue(config_ld(DIM))
    for i in range(DIM):  # A's row i at scratchpad row 2*i
        s.rocc(MVIN, Dram(pa.offset + i * DIM), operand(2 * i, DIM, 1))
    s.rocc(MVIN, pb, operand(100, DIM, DIM))
    s.rocc(PRELOAD, operand(100, DIM, DIM), operand(ACC | 0, DIM, DIM))
    s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(GARBAGE, DIM, DIM))
    s.issue(config_st(DIM * 4))
    for i in range(DIM):  # C's row i at accumulator row 3*i
        s.rocc(MVOUT, Dram(out.offset + i * DIM * 4), operand(ACC | FULL | 3 * i, DIM, 1))
    s.read(out, DIM * DIM * 4)
    got = np.frombuffer(run_ok(gemmini_driver, s)[0], np.int32).reshape(DIM, DIM)
    assert (got == A.astype(np.int64) @ B).all()


def test_pixel_repeats_also_write_each_row_shifted_up_and_right(gemmini_driver):
    rows, cols = 3, 4
    src = np.arange(1, rows * cols + 1, dtype=np.int8).reshape(rows, cols)
    s = Script()
    pa, out = s.put(src), s.alloc(5 * DIM)
    s.issue(config_ld(cols, pixels=2))
    s.issue(config_st(DIM))
    s.rocc(MVIN, pa, operand(10, cols, rows))
    s.rocc(MVOUT, out, operand(9, DIM, 5))
    s.read(out, 5 * DIM)
    got = int8(run_ok(gemmini_driver, s)[0], 5, DIM)
    expected = np.zeros((5, DIM), np.int64)
    for r in range(rows):
        for p in range(2):  # repeat p lands p rows up and p*cols columns right
            expected[1 + r - p, p * cols : (p + 1) * cols] = src[r]
    assert (got == expected).all()


def test_pooled_mvout_takes_the_window_maximum_with_zero_padding(gemmini_driver):
    rng = np.random.default_rng(33)
    orows = ocols = 5
    channels, size, stride, pad = 8, 3, 2, 1
    porows = pocols = (orows + 2 * pad - size) // stride + 1
    acc = rng.integers(-300, 300, (orows * ocols, DIM), dtype=np.int32)
    scale = 0.5
    s = Script()
    pacc, out = s.put(acc), s.alloc(porows * pocols * channels)
    s.issue(config_ld(DIM * 4))
    s.rocc(MVIN, pacc, operand(ACC | 0, DIM, orows * ocols))
    rs1 = ((ocols << 56) | (orows << 48) | (pocols << 40) | (porows << 32) | (pocols << 24) | (pad << 10)
           | (pad << 8) | (size << 6) | (stride << 4) | 2)
    s.rocc(0, rs1, (f32_bits(scale) << 32) | channels)
    s.rocc(MVOUT, out, operand(ACC | 0, channels, 0))
    s.read(out, porows * pocols * channels)
    got = int8(run_ok(gemmini_driver, s)[0], porows * pocols, channels).reshape(porows, pocols, channels)
    pixels = scale_round_saturate(acc[:, :channels], scale).reshape(orows, ocols, channels)
    padded = np.zeros((orows + 2 * pad + 1, ocols + 2 * pad + 1, channels), np.int64)  # outside = 0
    padded[pad : pad + orows, pad : pad + ocols] = pixels
    expected = np.full((porows, pocols, channels), -128, np.int64)
    for wr in range(size):
        for wc in range(size):
            window = padded[wr : wr + stride * porows : stride, wc : wc + stride * pocols : stride]
            expected = np.maximum(expected, window)
    assert (got == expected).all()
