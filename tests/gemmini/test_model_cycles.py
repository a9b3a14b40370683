"""Sanity of the cycle model: deterministic, monotone in work, overlap pays, host work is charged."""

from __future__ import annotations

from test_model_isa import (
    ACC,
    COMPUTE_PRELOADED,
    DIM,
    FULL,
    GARBAGE,
    MVIN,
    MVOUT,
    PRELOAD,
    WS,
    Script,
    config_ex,
    config_ld,
    config_st,
    loop_ws,
    operand,
    parse_cycles,
    tiles,
)


def _timed(driver, body) -> tuple[int, object]:
    """Cycles between two fenced cycle reads around body(script), as a harness measures a kernel."""
    s = Script(size=8 << 20)
    s.issue(config_ex(WS))
    s.fence()
    s.cycles()
    body(s)
    s.fence()
    s.cycles()
    res = driver(s.text())
    assert res.returncode == 0, res.output
    start, end = parse_cycles(res.output)
    return end - start, res


def _loop_matmul(n: int):
    def body(s: Script) -> None:
        a, b, c = s.alloc(n * n), s.alloc(n * n), s.alloc(n * n)
        s.issue(config_ld(n, slot=0))
        s.issue(config_ld(n, slot=1))
        s.issue(config_st(n))
        t, pad = tiles(n)
        loop_ws(s, t, t, t, pad, pad, pad, a, b, 0, c, n, n, 0, n)

    return body


def _tiles(count: int, fence_each: bool):
    """`count` independent DIM^3 matmuls, each: mvin A, mvin B, preload, compute, mvout."""

    def body(s: Script) -> None:
        s.issue(config_ld(DIM))
        s.issue(config_st(DIM * 4))
        for t in range(count):
            a, b, c = s.alloc(DIM * DIM), s.alloc(DIM * DIM), s.alloc(DIM * DIM * 4)
            s.rocc(MVIN, a, operand(2 * t * DIM, DIM, DIM))
            s.rocc(MVIN, b, operand((2 * t + 1) * DIM, DIM, DIM))
            s.rocc(PRELOAD, operand((2 * t + 1) * DIM, DIM, DIM), operand(ACC | t * DIM, DIM, DIM))
            s.rocc(COMPUTE_PRELOADED, operand(2 * t * DIM, DIM, DIM), operand(GARBAGE, DIM, DIM))
            s.rocc(MVOUT, c, operand(ACC | FULL | t * DIM, DIM, DIM))
            if fence_each:
                s.fence()

    return body


def test_cycles_are_deterministic(gemmini_driver):
    assert _timed(gemmini_driver, _loop_matmul(64))[0] == _timed(gemmini_driver, _loop_matmul(64))[0]


def test_more_work_never_costs_fewer_cycles(gemmini_driver):
    cycles = [_timed(gemmini_driver, _loop_matmul(n))[0] for n in (16, 32, 48, 64, 80)]
    assert all(x < y for x, y in zip(cycles, cycles[1:], strict=False)), cycles
    tiles_cycles = [_timed(gemmini_driver, _tiles(n, False))[0] for n in (1, 2, 4, 8)]
    assert all(x < y for x, y in zip(tiles_cycles, tiles_cycles[1:], strict=False)), tiles_cycles


def test_overlapping_loads_with_compute_beats_a_fenced_serial_version(gemmini_driver):
    overlapped, _ = _timed(gemmini_driver, _tiles(8, fence_each=False))
    serial, _ = _timed(gemmini_driver, _tiles(8, fence_each=True))
    assert overlapped < 0.9 * serial, (overlapped, serial)  # DRAM-bound either way: latency is what hides


def test_a_store_waits_for_the_compute_that_writes_its_rows(gemmini_driver):
    def body(dependent: bool):
        def run(s: Script) -> None:
            a, b, c = s.alloc(DIM * DIM), s.alloc(DIM * DIM), s.alloc(DIM * DIM * 4)
            s.issue(config_ld(DIM))
            s.issue(config_st(DIM * 4))
            s.rocc(MVIN, a, operand(0, DIM, DIM))
            s.rocc(MVIN, b, operand(DIM, DIM, DIM))
            s.rocc(PRELOAD, operand(DIM, DIM, DIM), operand(ACC | 0, DIM, DIM))
            s.rocc(COMPUTE_PRELOADED, operand(0, DIM, DIM), operand(GARBAGE, DIM, DIM))
            s.rocc(MVOUT, c, operand(ACC | FULL | (0 if dependent else 512), DIM, DIM))

        return run

    dependent, _ = _timed(gemmini_driver, body(True))
    independent, _ = _timed(gemmini_driver, body(False))
    assert dependent > independent


def test_a_fence_waits_for_all_outstanding_work(gemmini_driver):
    s = Script(size=8 << 20)
    _loop_matmul(80)(s)
    s.cycles()  # no fence: only the host's issue time has passed
    s.fence()
    s.cycles()
    res = gemmini_driver(s.text())
    assert res.returncode == 0, res.output
    unfenced, fenced = parse_cycles(res.output)
    assert unfenced < fenced
    assert fenced >= res.stats["accelerator_done_cycle"]


def test_accelerator_utilization_of_a_large_loop_is_plausible(gemmini_driver):
    n = 80
    cycles, res = _timed(gemmini_driver, _loop_matmul(n))
    util = res.stats["macs"] / (DIM * DIM) / cycles
    assert res.stats["macs"] == n**3
    assert 0.05 < util <= 1.0, util


CPU_VS_ACCEL = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <gemmini_params.h>
#include "xcustom.h"
#define N 64
#define ROCC(f, a, b) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(a), (uint64_t)(b), f)
static elem_t A[N][N], B[N][N], C_cpu[N][N], C_acc[N][N];

static void cpu_matmul(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      int32_t s = 0;
      for (int k = 0; k < N; k++) s += A[i][k] * B[k][j];
      C_cpu[i][j] = s > 127 ? 127 : (s < -128 ? -128 : s);
    }
}

static void accel_matmul(void) {
  uint64_t one = (uint64_t)0x3F800000 << 32;
  ROCC(0, one | (1 << 16) | (1 << 2), (uint64_t)1 << 48);              /* config_ex: WS */
  ROCC(0, one | ((uint64_t)DIM << 16) | (0 << 3) | 1, N);               /* config_ld slot 0: A */
  ROCC(0, one | ((uint64_t)DIM << 16) | (1 << 3) | 1, N);               /* config_ld slot 1: B */
  ROCC(0, 2, one | N);                                                 /* config_st */
  ROCC(9, 0, ((uint64_t)(N / DIM) << 32) | ((uint64_t)(N / DIM) << 16) | (N / DIM));
  ROCC(10, A, B);
  ROCC(11, 0, C_acc);
  ROCC(12, N, N);
  ROCC(13, 0, N);
  ROCC(8, 0, 0);
}

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) { A[i][j] = (i * 7 + j * 3) % 11 - 5; B[i][j] = (i * 5 + j) % 9 - 4; }
  gemmini_model_fence();
  uint64_t t0 = gemmini_model_cycles();
  cpu_matmul();
  uint64_t t1 = gemmini_model_cycles();
  accel_matmul();
  gemmini_model_fence();
  uint64_t t2 = gemmini_model_cycles();
  printf("cpu %llu accel %llu same %d\n", (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
         memcmp(C_cpu, C_acc, sizeof C_cpu) == 0);
  return 0;
}
"""


def test_a_cpu_matmul_costs_more_model_cycles_than_the_accelerated_one(gemmini_c):
    res = gemmini_c(CPU_VS_ACCEL)()
    assert res.returncode == 0, res.output
    fields = res.output.split()
    cpu, accel, same = int(fields[1]), int(fields[3]), int(fields[5])
    assert same == 1  # both computed the same result
    assert cpu > 10 * accel, (cpu, accel)
    assert res.stats["host_blocks"] > 64**3  # the CPU loop's blocks were charged


HOST_LOOP = r"""
#include <stdio.h>
#include <stdint.h>
#include "xcustom.h"
int main(int argc, char **argv) {
  (void)argv;
  volatile int sink = 0;
  uint64_t t0 = gemmini_model_cycles();
  for (int i = 0; i < 1000 * argc; i++) sink += i;
  uint64_t t1 = gemmini_model_cycles();
  printf("%llu\n", (unsigned long long)(t1 - t0));
  return 0;
}
"""


def test_host_work_is_charged_per_basic_block(gemmini_c):
    res = gemmini_c(HOST_LOOP)()
    assert res.returncode == 0, res.output
    cycles = int(res.output.split()[0])
    assert 1000 <= cycles <= 20 * 1000  # a few cycles per loop iteration, never free
    assert res.stats["host_blocks"] >= 1000


UNROLL = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "xcustom.h"
#define N 4096
static volatile int8_t data[N];
static int8_t src[1 << 16], dst[1 << 16];

int main(void) {
  int32_t a = 0, b = 0;
  uint64_t t0 = gemmini_model_cycles();
  for (int i = 0; i < N; i++) a += data[i];
  uint64_t t1 = gemmini_model_cycles();
  for (int i = 0; i < N; i += 8)
    b += data[i] + data[i + 1] + data[i + 2] + data[i + 3] + data[i + 4] + data[i + 5] + data[i + 6] + data[i + 7];
  uint64_t t2 = gemmini_model_cycles();
  memcpy(dst, src, sizeof dst);
  uint64_t t3 = gemmini_model_cycles();
  printf("%llu %llu %llu %d\n", (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
         (unsigned long long)(t3 - t2), a + b + dst[5]);
  return 0;
}
"""


def test_host_work_is_charged_per_instruction_so_unrolling_saves_only_loop_overhead(gemmini_c):
    res = gemmini_c(UNROLL)()
    assert res.returncode == 0, res.output
    rolled, unrolled, _, _ = (int(v) for v in res.output.split())
    assert rolled >= 4096 * 3  # load, add, loop control: several instructions per element
    assert unrolled >= rolled / 2  # a per-block price would make the 8x unrolled loop ~8x cheaper
    assert res.stats["host_instructions"] > 4096 * 2


def test_copying_with_memcpy_is_host_work_too(gemmini_c):
    res = gemmini_c(UNROLL)()
    copy = int(res.output.split()[2])
    assert copy >= (1 << 16) // 8  # 64 KiB at a few bytes per cycle, not free
