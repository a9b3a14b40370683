"""LayerNorm and softmax on the accumulator read-out (upstream Gemmini's normalizer), on our own programs.

The expected values come from the integer algorithms written here again in Python, from their public
descriptions: upstream's CPU reference (gemmini-rocc-tests include/gemmini.h, matmul_cpu) for LayerNorm
(truncating mean / variance / division, floor square root, 1 when the variance is 0) and I-BERT's
integer exponential as Gemmini's AccumulatorScale.iexp and matmul_cpu compute it for softmax
(z = (-q * qln2_inv) >> 16, qp = q + z * qln2, ((qp + qb)^2 + qc) >> z, then * (127 / sum) in float32,
ties to even, saturated). A shift of 32 or more gives 0 (the RTL's saturated shift).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

INCLUDE = Path(__file__).resolve().parents[2] / "targets" / "gemmini" / "include"


@pytest.fixture
def normalizations(tmp_path: Path) -> Path:
    """A configuration directory: the default parameters plus HAS_NORMALIZATIONS."""
    text = (INCLUDE / "gemmini_params.h").read_text()
    end = "#endif /* GEMMINI_PARAMS_H */"
    assert end in text
    d = tmp_path / "normalizations"
    d.mkdir()
    (d / "gemmini_params.h").write_text(text.replace(end, "#define HAS_NORMALIZATIONS\n" + end))
    return d


# ---- the reference, in Python ------------------------------------------------------------------------

def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def readout(x: int, scale: float) -> int:
    """x * scale in float32, ties to even, saturated to int8."""
    y = float(np.rint(np.float32(x) * np.float32(scale)))
    return int(max(-128, min(127, y)))


def layernorm_row(row: list[int], scale: float) -> list[int]:
    n = len(row)
    mean = trunc_div(sum(row), n)
    variance = trunc_div(sum((x - mean) ** 2 for x in row), n)
    assert variance < 2**31, "the test keeps the squared error inside 32 bits"
    stddev = 1 if variance == 0 else math.isqrt(variance)
    return [readout(trunc_div(x - mean, stddev), scale) for x in row]


def softmax_constants(bert_scale: float) -> tuple[int, int, int, int]:
    """Upstream's tiled_matmul_outer: float coefficients, double ln 2, each truncated to int."""
    s = np.float32(bert_scale)
    qln2 = int(0.693147 / float(s))
    qb = int(np.float32(1.353) / s)
    qc = int(np.float32(0.344) / (np.float32(0.3585) * s * s))
    return qln2, 65536 // qln2, qb, qc


def iexp(q: int, qln2: int, qln2_inv: int, qb: int, qc: int) -> int:
    assert q <= 0
    z = (-q * qln2_inv) >> 16
    if z >= 32:
        return 0
    qp = q + z * qln2
    poly = (qp + qb) ** 2 + qc
    assert 0 <= poly < 2**31
    return poly >> z


def softmax_row(row: list[int], consts: tuple[int, int, int, int]) -> list[int]:
    m = max(row)
    e = [iexp(x - m, *consts) for x in row]
    factor = np.float32(127) / np.float32(sum(e))
    return [int(max(-128, min(127, float(np.rint(np.float32(v) * factor))))) for v in e]


def test_the_reference_exponential_follows_ibert() -> None:
    # I-BERT's i-exp approximates exp(q * S): at bert_scale 0.05, exp(0) = 1 and exp(-1) = 0.368 of it.
    consts = softmax_constants(0.05)
    assert consts == (13, 5041, 27, 383)
    one = iexp(0, *consts)
    assert abs(iexp(-20, *consts) / one - np.exp(-1.0)) < 0.02
    assert iexp(-20 * 40, *consts) == 0  # exp(-40): a shift past 31 bits


# ---- the model: normalization commands on the accumulator ----------------------------------------------

ROWS_PROGRAM = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
#define ROWS @ROWS@
#define J @J@
static acc_t In[ROWS][J] = {@VALUES@};
static elem_t Out[ROWS][J];
int main() {
  gemmini_flush(0);
  gemmini_config_ld(J * sizeof(acc_t));
  for (int b = 0; b * DIM < J; b++)
    gemmini_extended_mvin(&In[0][b * DIM], GEMMINI_ACC_ADDR | (b * DIM), J - b * DIM < DIM ? J - b * DIM : DIM, ROWS);
  gemmini_extended_config_st(J * sizeof(elem_t), @ACT@ & 3, @SCALE@);
  @CONFIG@
  /* the passes, NORM_STAT_IDS rows at a time, each row on its own statistics id; each row leaves in one
   * mvout of all its column blocks */
  static const uint32_t cmds[3] = {@CMDS@};
  for (int row = 0; row < ROWS; row += NORM_STAT_IDS)
    for (int pass = 0; pass < 3; pass++)
      for (int id = 0; id < NORM_STAT_IDS && row + id < ROWS; id++) {
        gemmini_config_norm(0, 0, @STATS_ONLY@, 0, id, 0, 0);
        gemmini_extended_mvout(Out[row + id], GEMMINI_ACC_ADDR | (row + id) | (cmds[pass] << 26), J, 1);
      }
  gemmini_fence();
  for (int r = 0; r < ROWS; r++) {
    for (int j = 0; j < J; j++) printf("%d ", Out[r][j]);
    printf("\n");
  }
  return 0;
}
"""


def rows_program(rows: list[list[int]], act: str, scale: str, config: str, cmds: str, stats_only: int) -> str:
    values = ", ".join("{" + ", ".join(map(str, r)) + "}" for r in rows)
    return (ROWS_PROGRAM.replace("@ROWS@", str(len(rows))).replace("@J@", str(len(rows[0])))
            .replace("@VALUES@", values).replace("@ACT@", act).replace("@SCALE@", scale)
            .replace("@CONFIG@", config).replace("@CMDS@", cmds).replace("@STATS_ONLY@", str(stats_only)))


def printed_rows(output: str) -> list[list[int]]:
    return [[int(v) for v in line.split()] for line in output.strip().splitlines()]


@pytest.mark.parametrize("cols,scale", [(40, 1.0), (12, 0.5), (64, 2.0)])
def test_layernorm_commands_read_out_each_row_normalized(gemmini_c, normalizations: Path, cols: int,
                                                         scale: float) -> None:
    rng = random.Random(cols)
    rows = [[rng.randint(-2000, 2000) for _ in range(cols)] for _ in range(6)]
    rows[5] = [7] * cols  # a constant row: variance 0, divided by 1
    source = rows_program(rows, "LAYERNORM", f"{scale}f", "", "2, 4, 0", 0)
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    assert printed_rows(result.output) == [layernorm_row(r, scale) for r in rows]


@pytest.mark.parametrize("cols", [40, 12, 64])
def test_softmax_commands_read_out_each_row_normalized(gemmini_c, normalizations: Path, cols: int) -> None:
    rng = random.Random(100 + cols)
    rows = [[rng.randint(-400, 400) for _ in range(cols)] for _ in range(6)]
    consts = softmax_constants(0.05)
    qln2, qln2_inv, qb, qc = consts
    config = (f"gemmini_config_norm({qln2}, 0, 0, 1, 0, {qb}, {qc});"
              f"gemmini_config_norm({qln2_inv}, 1, 0, 1, 0, {qb}, {qc});")
    source = rows_program(rows, "SOFTMAX", "1.0f", config, "5, 7, 0", 1)
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    assert printed_rows(result.output) == [softmax_row(r, consts) for r in rows]


def test_a_statistics_pass_writes_nothing_to_memory(gemmini_c, normalizations: Path) -> None:
    # The output buffer starts at 99: a LayerNorm sum/variance pass leaves it untouched.
    source = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
static acc_t In[DIM];
static elem_t Out[DIM];
int main() {
  for (int j = 0; j < DIM; j++) In[j] = j, Out[j] = 99;
  gemmini_config_ld(DIM * sizeof(acc_t));
  gemmini_extended_mvin(In, GEMMINI_ACC_ADDR, DIM, 1);
  gemmini_extended_config_st(DIM, LAYERNORM, 1.0f);
  gemmini_config_norm(0, 0, 0, 0, 0, 0, 0);
  gemmini_extended_mvout(Out, GEMMINI_ACC_ADDR | (2u << 26), DIM, 1);
  gemmini_extended_mvout(Out, GEMMINI_ACC_ADDR | (4u << 26), DIM, 1);
  gemmini_fence();
  for (int j = 0; j < DIM; j++) printf("%d ", Out[j]);
  printf("\n");
  return 0;
}
"""
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    assert printed_rows(result.output) == [[99] * 16]


FINISHING_COST = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
static acc_t In[DIM];
static elem_t Out[DIM];
int main() {
  for (int j = 0; j < DIM; j++) In[j] = j;
  gemmini_config_ld(DIM * sizeof(acc_t));
  gemmini_extended_mvin(In, GEMMINI_ACC_ADDR, DIM, 1);
  gemmini_extended_config_st(DIM, LAYERNORM, 1.0f);
  gemmini_config_norm(0, 0, 0, 0, 0, 0, 0);
  gemmini_fence();
  uint64_t start = read_cycles();
  for (int i = 0; i < 20; i++) gemmini_extended_mvout(Out, GEMMINI_ACC_ADDR | (@CMD@u << 26), DIM, 1);
  gemmini_fence();
  printf("%llu\n", (unsigned long long)(read_cycles() - start));
  return 0;
}
"""


def test_a_command_that_ends_a_statistic_pays_the_normalizers_iterative_units(gemmini_c,
                                                                               normalizations: Path) -> None:
    def cycles(cmd: int) -> int:
        result = gemmini_c(FINISHING_COST.replace("@CMD@", str(cmd)), params_dir=normalizations)()
        assert result.returncode == 0, result.output
        return int(result.output.strip())

    running, mean, inv_stddev = cycles(1), cycles(2), cycles(4)
    # timing_params.h: a 32-bit division is 34 cycles; 1/stddev adds a square root (33) and a float32
    # reciprocal (26). The running sums (one accumulator row each) hide behind the host's loop; the
    # finishing commands make the serial store queue the bottleneck: 20 x (1 row + 34) plus its latency.
    assert running < 20 * 34
    assert 20 * 35 <= mean < 20 * 35 + 40
    assert inv_stddev - mean == 20 * (33 + 26)


def test_a_read_out_activation_set_by_config_st_drops_softmaxs_third_bit(gemmini_c, normalizations: Path) -> None:
    # After a softmax configuration, CONFIG_ST with NO_ACTIVATION reads out plain values again (upstream's
    # transformer layers run a softmax matmul, then plain ones).
    source = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
static acc_t In[DIM];
static elem_t Out[DIM];
int main() {
  for (int j = 0; j < DIM; j++) In[j] = j - 5;
  gemmini_config_ld(DIM * sizeof(acc_t));
  gemmini_extended_mvin(In, GEMMINI_ACC_ADDR, DIM, 1);
  gemmini_extended_config_st(DIM, NO_ACTIVATION, 1.0f);
  gemmini_config_norm(13, 0, 0, 1, 0, 27, 383);
  gemmini_extended_config_st(DIM, NO_ACTIVATION, 1.0f);
  gemmini_extended_mvout(Out, GEMMINI_ACC_ADDR, DIM, 1);
  gemmini_fence();
  for (int j = 0; j < DIM; j++) printf("%d ", Out[j]);
  printf("\n");
  return 0;
}
"""
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    assert printed_rows(result.output) == [[j - 5 for j in range(16)]]


def test_normalization_commands_without_normalizations_are_refused(gemmini_c) -> None:
    rows = [[1, 2, 3, 4]]
    result = gemmini_c(rows_program(rows, "LAYERNORM", "1.0f", "", "2, 4, 0", 0))()
    assert result.returncode != 0
    assert "normalization command 2" in result.output and "HAS_NORMALIZATIONS" in result.output


def test_a_statistics_id_past_the_configurations_is_refused(gemmini_c, normalizations: Path) -> None:
    source = r"""
#include "include/gemmini_testutils.h"
int main() { gemmini_config_norm(0, 0, 1, 0, NORM_STAT_IDS, 0, 0); gemmini_fence(); return 0; }
"""
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode != 0
    assert "statistics id 4 is out of range" in result.output


# ---- the library: tiled_matmul with LAYERNORM / SOFTMAX, tiled_norm_auto ---------------------------------

MATMUL_PROGRAM = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
#define I @I@
#define J @J@
#define K @K@
static elem_t A[I][K] = {@A@};
static elem_t B[K][J] = {@B@};
static acc_t D[I][J] = {@D@};
static elem_t C[I][J];
int main() {
  tiled_matmul_auto(I, J, K, (elem_t *)A, (elem_t *)B, @BIAS@, (elem_t *)C, K, J, J, J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, @ACT@, @SCALE@, 0.05f, false,
                    false, false, false, false, 0, @TYPE@);
  for (int i = 0; i < I; i++) {
    for (int j = 0; j < J; j++) printf("%d ", C[i][j]);
    printf("\n");
  }
  return 0;
}
"""


def c_matrix(m: np.ndarray) -> str:
    return ", ".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in m)


def matmul_case(seed: int, i: int, j: int, k: int, lo: int, hi: int):
    rng = np.random.default_rng(seed)
    a = rng.integers(lo, hi + 1, size=(i, k))
    b = rng.integers(lo, hi + 1, size=(k, j))
    d = rng.integers(-20, 21, size=(i, j))
    return a, b, d


@pytest.mark.parametrize("kind", ["WS", "CPU"])
@pytest.mark.parametrize("act", ["LAYERNORM", "SOFTMAX"])
@pytest.mark.parametrize("dims", [(35, 70, 45), (200, 40, 20)], ids=["one tile", "two row tiles"])
def test_tiled_matmul_normalizes_rows_of_c(gemmini_c, normalizations: Path, act: str, kind: str,
                                           dims: tuple[int, int, int]) -> None:
    # Partial last row blocks and column tiles, with a bias; 200 rows (13 row blocks) of 3 column blocks
    # take two loops (a tile holds at most 10 row blocks of whole rows of C in half the accumulator).
    i, j, k = dims
    a, b, d = matmul_case(7, i, j, k, -3, 3)
    c = a @ b + d
    source = (MATMUL_PROGRAM.replace("@I@", str(i)).replace("@J@", str(j)).replace("@K@", str(k))
              .replace("@A@", c_matrix(a)).replace("@B@", c_matrix(b)).replace("@D@", c_matrix(d))
              .replace("@BIAS@", "(acc_t *)D").replace("@ACT@", act).replace("@SCALE@", "0.5f")
              .replace("@TYPE@", kind))
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    if act == "LAYERNORM":
        expected = [layernorm_row([int(v) for v in row], 0.5) for row in c]
    else:
        expected = [softmax_row([int(v) for v in row], softmax_constants(0.05)) for row in c]
    assert printed_rows(result.output) == expected


NORM_PROGRAM = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
#define I @I@
#define J @J@
static acc_t In[I][J] = {@IN@};
static elem_t Out[I][J];
int main() {
  tiled_norm_auto(I, J, (acc_t *)In, (elem_t *)Out, @SCALE@, @ACT@, WS);
  for (int i = 0; i < I; i++) {
    for (int j = 0; j < J; j++) printf("%d ", Out[i][j]);
    printf("\n");
  }
  return 0;
}
"""


@pytest.mark.parametrize("act", ["LAYERNORM", "SOFTMAX"])
def test_tiled_norm_auto_normalizes_an_accumulator_matrix(gemmini_c, normalizations: Path, act: str) -> None:
    # 20 rows (two row blocks, NORM_STAT_IDS groups of 4), 100 columns (two mvout pieces of 64 and 36).
    rng = np.random.default_rng(3)
    m = rng.integers(-300, 301, size=(20, 100))
    source = (NORM_PROGRAM.replace("@I@", "20").replace("@J@", "100").replace("@IN@", c_matrix(m))
              .replace("@SCALE@", "1.0f").replace("@ACT@", act))
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    rows = [[int(v) for v in row] for row in m]
    if act == "LAYERNORM":
        expected = [layernorm_row(r, 1.0) for r in rows]
    else:  # tiled_norm's softmax uses bert_scale 0.05, as upstream's does
        expected = [softmax_row(r, softmax_constants(0.05)) for r in rows]
    assert printed_rows(result.output) == expected


def test_tiled_matmul_refuses_normalizing_on_the_output_stationary_dataflow(gemmini_c, normalizations: Path) -> None:
    a, b, d = matmul_case(1, 16, 16, 16, -3, 3)
    source = (MATMUL_PROGRAM.replace("@I@", "16").replace("@J@", "16").replace("@K@", "16")
              .replace("@A@", c_matrix(a)).replace("@B@", c_matrix(b)).replace("@D@", c_matrix(d))
              .replace("@BIAS@", "NULL").replace("@ACT@", "SOFTMAX").replace("@SCALE@", "1.0f")
              .replace("@TYPE@", "OS"))
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 3
    assert "LAYERNORM and SOFTMAX need the weight-stationary dataflow" in result.output


def test_tiled_norm_without_normalizations_is_a_library_error(gemmini_c) -> None:
    source = (NORM_PROGRAM.replace("@I@", "2").replace("@J@", "4").replace("@IN@", "{1,2,3,4},{5,6,7,8}")
              .replace("@SCALE@", "1.0f").replace("@ACT@", "LAYERNORM"))
    result = gemmini_c(source)()
    assert result.returncode == 3
    assert "HAS_NORMALIZATIONS" in result.output
