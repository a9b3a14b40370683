"""How fast the native Gemmini model emulates a 512x512x512 int8 GEMM issued as LOOP_WS instructions.

Prints the emulation wall time of the kernel (measured inside the program), the model's cycle count and
the array utilization it implies. A figure to watch, not a pass/fail check.

    .venv/bin/python benchmarks/gemmini_model_bench.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from speedpatch.targets.gemmini.build import build_native, read_stats, run_native

N = 512
BLOCK = 64  # C is computed in BLOCK x BLOCK pieces, one LOOP_WS each with the whole K

PROGRAM = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <gemmini_params.h>
#include "xcustom.h"
#define N %(n)d
#define BLOCK %(block)d
#define ROCC(f, a, b) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(a), (uint64_t)(b), f)
static elem_t A[N][N], B[N][N], C[N][N];

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) { A[i][j] = (i * 7 + j * 3) %% 11 - 5; B[i][j] = (i * 5 + j) %% 9 - 4; }
  uint64_t one = (uint64_t)0x3F800000 << 32;
  const uint64_t t = BLOCK / DIM, tk = N / DIM;
  int spad_id = 1;
  gemmini_model_fence();
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  uint64_t c0 = gemmini_model_cycles();
  ROCC(0, one | (1 << 16) | (1 << 2), (uint64_t)1 << 48);       /* config_ex: weight-stationary */
  ROCC(0, one | ((uint64_t)DIM << 16) | (0 << 3) | 1, N);        /* config_ld slot 0 (A) */
  ROCC(0, one | ((uint64_t)DIM << 16) | (1 << 3) | 1, N);        /* config_ld slot 1 (B) */
  ROCC(0, 2, one | N);                                          /* config_st */
  for (int bi = 0; bi < N; bi += BLOCK)
    for (int bj = 0; bj < N; bj += BLOCK) {
      ROCC(9, 0, (tk << 32) | (t << 16) | t);
      ROCC(10, &A[bi][0], &B[0][bj]);
      ROCC(11, 0, &C[bi][bj]);
      ROCC(12, N, N);
      ROCC(13, 0, N);
      ROCC(8, (uint64_t)spad_id << 18 | (uint64_t)spad_id << 16, 0); /* alternate scratchpad halves */
      spad_id = 3 - spad_id;
    }
  gemmini_model_fence();
  uint64_t c1 = gemmini_model_cycles();
  clock_gettime(CLOCK_MONOTONIC, &w1);
  int32_t s = 0;  /* spot check one element against the CPU */
  for (int k = 0; k < N; k++) s += A[N - 1][k] * B[k][N - 1];
  int ok = C[N - 1][N - 1] == (s > 127 ? 127 : (s < -128 ? -128 : s));
  printf("{\"seconds\": %%.4f, \"cycles\": %%llu, \"spot_check\": %%d}\n",
         (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) * 1e-9, (unsigned long long)(c1 - c0), ok);
  return 0;
}
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = work / "gemm512.c"
        src.write_text(PROGRAM % {"n": N, "block": BLOCK})
        res, exe = build_native(src, work, timeout=300)
        if exe is None:
            print(res.output, file=sys.stderr)
            return 1
        run = run_native(exe, work, timeout=600, stats_path=work / "stats.json")
        if run.returncode != 0:
            print(run.output, file=sys.stderr)
            return 1
        result = json.loads(run.output.strip().splitlines()[-1])
        stats = read_stats(work / "stats.json") or {}
    dim = stats.get("dim", 16)
    util = N**3 / (dim * dim) / result["cycles"]
    print(f"512^3 GEMM via LOOP_WS: emulated in {result['seconds']:.3f} s wall, "
          f"{result['cycles']} model cycles, utilization {util:.1%}, spot check {'ok' if result['spot_check'] else 'FAILED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
