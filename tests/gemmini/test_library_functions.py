"""The library functions of our gemmini.h (tiled_matmul in both dataflows, tiled_matmul_auto, the core-issued
form, tiled_conv_auto / tiled_conv) against plain-C references, on the native model, bit for bit.

One C program runs every case (odd shapes with partial blocks, bias, scales, ReLU, transposes, full/low
precision C/D) and prints one line per case; each test checks one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PROGRAM = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"

static elem_t A[200 * 200], B[200 * 200], C[200 * 200], G[200 * 200];
static acc_t D[200 * 200], CF[200 * 200], GF[200 * 200];

static void fill(void) {
  speedpatch_fill_elem(A, 200 * 200, -20, 20);
  speedpatch_fill_elem(B, 200 * 200, -20, 20);
  speedpatch_fill_acc(D, 200 * 200, -3000, 3000);
}

static void report(const char *name, const void *got, const void *want, size_t bytes) {
  printf("case %s %s\n", name, memcmp(got, want, bytes) == 0 ? "ok" : "FAIL");
}

/* tiled_matmul in a given mode vs the library's plain-C path on the same arguments. */
static void matmul_case(const char *name, size_t I, size_t J, size_t K, bool bias, bool repeating, int act,
                        float scale, bool tA, bool tB, bool full_C, size_t ti, size_t tj, size_t tk,
                        enum tiled_matmul_type_t type) {
  fill();
  const size_t sA = tA ? I : K, sB = tB ? K : J;
  void *out = full_C ? (void *)CF : (void *)C, *gold = full_C ? (void *)GF : (void *)G;
  const size_t bytes = I * J * (full_C ? sizeof(acc_t) : sizeof(elem_t));
  memset(out, 0x33, bytes);
  tiled_matmul(I, J, K, A, B, bias ? D : NULL, gold, sA, sB, J, J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, act,
               scale, 0, repeating, 1, 1, 1, tA, tB, full_C, false, 0, CPU);
  tiled_matmul(I, J, K, A, B, bias ? D : NULL, out, sA, sB, J, J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, act,
               scale, 0, repeating, ti, tj, tk, tA, tB, full_C, false, 0, type);
  gemmini_fence();
  report(name, out, gold, bytes);
}

static elem_t conv_in[2 * 11 * 11 * 40], conv_w[3 * 3 * 40 * 24], conv_out[2 * 11 * 11 * 24], conv_gold[2 * 11 * 11 * 24];
static acc_t conv_bias[24];
static const acc_t conv_zero_bias[24] = {0};

/* 2 x 11x11 x 40 -> 24 channels, 3x3, explicit tiles, through tiled_conv (LOOP_CONV_WS per tile) or the
 * core-issued form, vs the harness's gold result. */
static void conv_case(const char *name, int stride, int padding, bool bias, int batches, int porows, int pocols,
                      int pochs, int krows, int kcols, int kchs, bool core) {
  const int od = (11 + 2 * padding - 3) / stride + 1;
  const acc_t *b = bias ? conv_bias : NULL;
  speedpatch_gold_conv(2, 11, 40, 24, od, 3, stride, padding, conv_in, conv_w, bias ? conv_bias : conv_zero_bias,
                       conv_gold, 1.0f / 64, RELU);
  memset(conv_out, 0x11, sizeof conv_out);
  if (core)
    gemmini_tiled_conv_core(2, 11, 11, 40, 24, od, od, stride, 1, 1, padding, 3, false, false, false, false, false,
                            batches, porows, pocols, pochs, krows, kcols, kchs, conv_in, conv_w, b, conv_out, RELU,
                            1.0f / 64, 0, 0, 0, WS);
  else
    tiled_conv(2, 11, 11, 40, 24, od, od, stride, 1, 1, padding, 3, false, false, false, false, false, batches,
               porows, pocols, pochs, krows, kcols, kchs, conv_in, conv_w, b, conv_out, RELU, 1.0f / 64, 0, 0, 0, WS);
  gemmini_fence();
  report(name, conv_out, conv_gold, (size_t)2 * od * od * 24);
}

int main(void) {
  speedpatch_seed_inputs(7);
  matmul_case("ws_loop_odd_shape", 50, 70, 90, true, false, NO_ACTIVATION, 1.0f / 16, false, false, false, 2, 3, 4, WS);
  matmul_case("ws_loop_relu_repeating_bias", 64, 48, 80, true, true, RELU, 1.0f / 8, false, false, false, 3, 2, 2, WS);
  matmul_case("ws_loop_no_bias_k_tiles", 33, 17, 120, false, false, NO_ACTIVATION, 1.0f / 32, false, false, false, 1, 1, 2, WS);
  matmul_case("ws_loop_transposed_A", 40, 36, 52, true, false, NO_ACTIVATION, 1.0f / 16, true, false, false, 2, 2, 2, WS);
  matmul_case("ws_loop_transposed_B", 40, 36, 52, true, false, NO_ACTIVATION, 1.0f / 16, false, true, false, 2, 2, 2, WS);
  matmul_case("ws_loop_full_C", 30, 20, 40, true, false, NO_ACTIVATION, 1.0f, false, false, true, 2, 2, 2, WS);
  matmul_case("ws_non_integer_scale", 32, 32, 64, true, false, NO_ACTIVATION, 0.0123f, false, false, false, 2, 2, 4, WS);
  matmul_case("os_odd_shape", 50, 70, 90, true, false, NO_ACTIVATION, 1.0f / 16, false, false, false, 2, 3, 4, OS);
  matmul_case("os_relu_k_tiles", 45, 29, 100, false, false, RELU, 1.0f / 16, false, false, false, 1, 2, 3, OS);
  matmul_case("os_transposed_A", 40, 36, 52, true, false, NO_ACTIVATION, 1.0f / 16, true, false, false, 2, 2, 2, OS);

  /* tiled_matmul_auto and the core-issued form vs the harness's independent gold result. */
  fill();
  speedpatch_gold_matmul(100, 60, 130, A, B, D, G, 1.0f / 32, RELU);
  tiled_matmul_auto(100, 60, 130, A, B, D, C, 130, 60, 0, 60, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, RELU,
                    1.0f / 32, 0, true, false, false, false, false, 0, WS);
  gemmini_fence();
  report("auto_vs_gold", C, G, 100 * 60);
  memset(C, 0, sizeof C);
  gemmini_tiled_matmul_manual(100, 60, 130, A, B, D, C, 130, 60, 0, 60, RELU, 1.0f / 32, true, 3, 2, 5, WS);
  gemmini_fence();
  report("manual_ws_vs_gold", C, G, 100 * 60);
  memset(C, 0, sizeof C);
  gemmini_tiled_matmul_manual(100, 60, 130, A, B, D, C, 130, 60, 0, 60, RELU, 1.0f / 32, true, 3, 2, 5, OS);
  gemmini_fence();
  report("manual_os_vs_gold", C, G, 100 * 60);
  memset(C, 0, sizeof C);
  tiled_matmul(100, 60, 130, A, B, D, C, 130, 60, 0, 60, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, RELU,
               1.0f / 32, 0, true, 1, 1, 1, false, false, false, false, 0, CPU);
  report("cpu_path_vs_gold", C, G, 100 * 60);

  /* Convolutions vs the harness's independent gold result. */
  speedpatch_fill_elem(conv_in, sizeof conv_in, -16, 15);
  speedpatch_fill_elem(conv_w, sizeof conv_w, -16, 15);
  speedpatch_fill_acc(conv_bias, 24, -500, 500);
  speedpatch_gold_conv(2, 11, 40, 24, 11, 3, 1, 1, conv_in, conv_w, conv_bias, conv_gold, 1.0f / 64, RELU);
  tiled_conv_auto(2, 11, 11, 40, 24, 11, 11, 1, 1, 1, 1, 3, false, false, false, false, false, conv_in, conv_w,
                  conv_bias, conv_out, RELU, 1.0f / 64, 0, 0, 0, WS);
  gemmini_fence();
  report("conv_auto_pad1", conv_out, conv_gold, sizeof conv_out);
  speedpatch_gold_conv(2, 11, 40, 24, 11, 1, 1, 0, conv_in, conv_w, conv_bias, conv_gold, 1.0f / 16, NO_ACTIVATION);
  tiled_conv_auto(2, 11, 11, 40, 24, 11, 11, 1, 1, 1, 0, 1, false, false, false, false, false, conv_in, conv_w,
                  conv_bias, conv_out, NO_ACTIVATION, 1.0f / 16, 0, 0, 0, WS);
  gemmini_fence();
  report("conv_1x1", conv_out, conv_gold, sizeof conv_out);
  /* tiled_conv (one LOOP_CONV_WS per tile) with tiles split along each dimension: 2 x 11x11 x 40 -> 24. */
  conv_case("conv_stride2_explicit_tiles", 2, 0, true, 1, 2, 5, 16, 2, 3, 32, false);
  conv_case("conv_one_tile", 1, 1, true, 2, 11, 11, 24, 3, 3, 40, false);
  conv_case("conv_split_rows", 1, 1, true, 2, 3, 11, 24, 3, 3, 40, false);
  conv_case("conv_split_cols", 1, 1, true, 2, 11, 5, 24, 3, 3, 40, false);
  conv_case("conv_split_out_channels", 1, 1, true, 2, 11, 11, 16, 3, 3, 40, false);
  conv_case("conv_split_batch", 1, 1, true, 1, 11, 11, 24, 3, 3, 40, false);
  conv_case("conv_split_reduction_no_bias", 1, 1, false, 2, 11, 11, 24, 2, 1, 16, false);
  conv_case("conv_stride2_one_tile_40_channels", 2, 1, true, 2, 6, 6, 24, 3, 3, 40, false);
  conv_case("conv_stride2_every_split", 2, 1, true, 1, 2, 4, 16, 2, 3, 16, false);
  conv_case("conv_core_path_every_split", 1, 1, true, 1, 4, 6, 16, 2, 2, 32, true);
  /* The LOOP_CONV_WS macro on one tile holding the whole convolution. */
  speedpatch_gold_conv(2, 11, 40, 24, 11, 3, 1, 1, conv_in, conv_w, conv_bias, conv_gold, 1.0f / 64, RELU);
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(24, RELU, 1.0f / 64);
  gemmini_loop_conv_ws(2, 11, 11, 40, 24, 11, 11, 11, 11, 1, 1, 3, 1, 1, 1, 0, 2, 11, 11, 24, 3, 3, 40, 1, 1, 1, 1,
                       0, 0, 0, 0, 11, 11, conv_w, conv_out, conv_bias, conv_in, false, true, false, false, false, RELU,
                       false, false, false, false, 1, 40, 24, 24, false, 0, 0);
  gemmini_fence();
  report("loop_conv_ws_macro_one_tile", conv_out, conv_gold, sizeof conv_out);
  return 0;
}
"""

CASES = [
    "ws_loop_odd_shape", "ws_loop_relu_repeating_bias", "ws_loop_no_bias_k_tiles", "ws_loop_transposed_A",
    "ws_loop_transposed_B", "ws_loop_full_C", "ws_non_integer_scale", "os_odd_shape", "os_relu_k_tiles",
    "os_transposed_A", "auto_vs_gold", "manual_ws_vs_gold", "manual_os_vs_gold", "cpu_path_vs_gold",
    "conv_auto_pad1", "conv_1x1", "conv_stride2_explicit_tiles", "conv_one_tile", "conv_split_rows",
    "conv_split_cols", "conv_split_out_channels", "conv_split_batch", "conv_split_reduction_no_bias",
    "conv_stride2_one_tile_40_channels", "conv_stride2_every_split", "conv_core_path_every_split",
    "loop_conv_ws_macro_one_tile",
]


@pytest.fixture(scope="module")
def case_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    from speedpatch.targets.gemmini.build import build_native, run_native

    workdir: Path = tmp_path_factory.mktemp("library")
    src = workdir / "library_cases.c"
    src.write_text(PROGRAM)
    res, exe = build_native(src, workdir, timeout=120)
    assert exe is not None, res.output
    run = run_native(exe, workdir, 120)
    assert run.returncode == 0, run.output
    results = {}
    for line in run.output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "case":
            results[parts[1]] = parts[2]
    return results


@pytest.mark.parametrize("case", CASES)
def test_library_case_matches_reference(case_results: dict[str, str], case: str) -> None:
    assert case_results.get(case) == "ok", f"{case}: {case_results.get(case, 'did not run')}"


TILE_COUNT_PROGRAM = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"

static elem_t in[2 * 11 * 11 * 40], w[3 * 3 * 40 * 24], out[2 * 11 * 11 * 24], gold[2 * 11 * 11 * 24];
static acc_t bias[24];

int main(void) {
  speedpatch_seed_inputs(5);
  speedpatch_fill_elem(in, sizeof in, -16, 15);
  speedpatch_fill_elem(w, sizeof w, -16, 15);
  speedpatch_fill_acc(bias, 24, -500, 500);
  speedpatch_gold_conv(2, 11, 40, 24, 11, 3, 1, 1, in, w, bias, gold, 1.0f / 64, NO_ACTIVATION);
  /* 2 batches x 2 row tiles x 2 output-channel tiles x 1 reduction tile = 8 tiles. */
  tiled_conv(2, 11, 11, 40, 24, 11, 11, 1, 1, 1, 1, 3, false, false, false, false, false, 1, 6, 11, 16, 3, 3, 40, in, w,
             bias, out, NO_ACTIVATION, 1.0f / 64, 0, 0, 0, WS);
  gemmini_fence();
  printf("conv %s\n", memcmp(out, gold, sizeof out) == 0 ? "ok" : "FAIL");
  return 0;
}
"""


def test_tiled_conv_issues_one_loop_conv_ws_per_tile(tmp_path: Path) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    from speedpatch.targets.gemmini.build import build_native, read_stats, run_native

    src = tmp_path / "tile_count.c"
    src.write_text(TILE_COUNT_PROGRAM)
    res, exe = build_native(src, tmp_path, timeout=120)
    assert exe is not None, res.output
    run = run_native(exe, tmp_path, 120, stats_path=tmp_path / "stats.json")
    assert run.returncode == 0, run.output
    assert "conv ok" in run.output
    stats = read_stats(tmp_path / "stats.json")
    assert stats is not None
    assert stats["instructions"].get("LOOP_CONV_WS") == 8
    assert stats["instructions"].get("COMPUTE_PRELOADED", 0) == 0  # no core-issued computes
