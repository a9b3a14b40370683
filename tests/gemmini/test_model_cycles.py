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


OVERLAP_IN_ONE_BLOCK = r"""
#include <stdio.h>
#include <stdint.h>
#include <gemmini_params.h>
#include "xcustom.h"
#define ROCC(f, a, b) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(a), (uint64_t)(b), f)
#define R2(x) x x
#define R4(x) R2(R2(x))
#define R128(x) R4(R4(R4(R2(x))))  /* 128 copies: straight-line, no branch */
#define MVIN_16x64(buf, row) ROCC(2, buf, ((uint64_t)16 << 48) | ((uint64_t)64 << 32) | (row))
static elem_t first[16][64] __attribute__((aligned(4096))), second[16][64] __attribute__((aligned(4096)));
static volatile int sink;

/* each function is straight-line code: one basic block */
__attribute__((noinline)) static void load_only(void) { MVIN_16x64(first, 0); gemmini_model_fence(); }
__attribute__((noinline)) static void host_only(void) { R128(sink = sink + 1;) gemmini_model_fence(); }
__attribute__((noinline)) static void load_then_host(void) {
  MVIN_16x64(second, 256);
  R128(sink = sink + 1;)
  gemmini_model_fence();
}

int main(void) {
  uint64_t one = (uint64_t)0x3F800000 << 32;
  ROCC(0, one | ((uint64_t)DIM << 16) | 1, 64);  /* config_ld slot 0: rows 64 bytes apart */
  gemmini_model_fence();
  uint64_t t0 = gemmini_model_cycles();
  load_only();
  uint64_t t1 = gemmini_model_cycles();
  host_only();
  uint64_t t2 = gemmini_model_cycles();
  load_then_host();
  uint64_t t3 = gemmini_model_cycles();
  printf("%llu %llu %llu\n", (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
         (unsigned long long)(t3 - t2));
  return 0;
}
"""


def test_an_accelerator_instruction_is_issued_before_the_host_work_that_follows_it_in_its_block(gemmini_c):
    # A core runs its instructions in order: the mvin leaves when the core reaches it, and the host work
    # after it in the same basic block runs while the DMA works. Charging a block's instructions all at its
    # start would serialize them, and punish the unrolled command sequences hand-tuned kernels are made of.
    res = gemmini_c(OVERLAP_IN_ONE_BLOCK)()
    assert res.returncode == 0, res.output
    load, host, both = (int(v) for v in res.output.split())
    assert load > 100 and host > 128  # each is real work on its own
    assert both >= max(load, host)
    assert both < load + host - min(load, host) // 2, (load, host, both)


def test_copying_with_memcpy_is_host_work_too(gemmini_c):
    res = gemmini_c(UNROLL)()
    copy = int(res.output.split()[2])
    assert copy >= (1 << 16) // 8  # 64 KiB at a few bytes per cycle, not free


# ---- one test per timing mechanism, against the cycle model's own entry points --------------------------
# A small C probe calls timing.c directly (no host instrumentation, no functional model), so every number
# below is computed by hand from timing_params.h (gperf = ucb-bar/libgemmini perf/, FireSim preset):
# front end latency 5, L2 hit 12, miss detect 6, DRAM slot 8 cycles/line + latency 30, fill-to-data 7,
# scratchpad merge 16 B/cycle, load completion lag 2, store pipe 12 + accumulator read 4, bus 16 B/cycle,
# full-line Put ack 10, partial Put ack 22, same-line Puts 8 apart, mesh issue 3 / commit 51 / min rows 4.

PROBE_PRELUDE = r"""
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "model_internal.h"
void gm_fail(const char *fmt, ...) { va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap); exit(3); }

/* one host mvin of `rows` rows of `bytes` at addr, addr+stride, ... into scratchpad row `row` */
static uint64_t mvin(uint64_t addr, uint32_t rows, uint32_t bytes, uint64_t stride, uint32_t row) {
  tm_host_begin();
  for (uint32_t r = 0; r < rows; r++) if (addr) tm_note_dram(addr + r * stride, bytes, 0);
  tm_write(MEM_SPAD, row, rows, 1);
  uint64_t done = tm_schedule(U_LOAD, rows, 0, 0);
  tm_host_end();
  return done;
}
/* one host mvout of `rows` accumulator rows, each `bytes` to addr + r*stride */
static uint64_t mvout(uint64_t addr, uint32_t rows, uint32_t bytes, uint64_t stride, uint32_t acc_row) {
  tm_host_begin();
  tm_read(MEM_ACC, acc_row, rows, 1);
  for (uint32_t r = 0; r < rows; r++) tm_note_dram(addr + r * stride, bytes, 1);
  uint64_t done = tm_schedule(U_STORE, rows, T_ACC_READ_LATENCY, 0);
  tm_host_end();
  return done;
}
/* one compute streaming `rows` A rows from scratchpad row a into accumulator row c */
static uint64_t compute(uint32_t a, uint32_t c, uint32_t rows) {
  tm_host_begin();
  tm_read(MEM_SPAD, a, rows, 1);
  tm_write(MEM_ACC, c, rows, 1);
  uint64_t done = tm_schedule(U_EX, rows, T_MESH_LATENCY, 0);
  tm_host_end();
  return done;
}
int main(void) {
  tm_reset();
"""


def _probe(tmp_path, body: str, virtual_memory: bool = False) -> list[int]:
    """Compile and run `body` (statements printing integers with P(x)) against timing.c. Without virtual
    memory (a bare-metal program) unless asked: each test isolates one mechanism, so its hand-computed
    figure has no TLB misses in it."""
    import shutil
    import subprocess
    from pathlib import Path

    import pytest

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    root = Path(__file__).resolve().parents[2] / "targets" / "gemmini"
    src = tmp_path / "probe.c"
    src.write_text(PROBE_PRELUDE + "#define P(x) printf(\"%llu\\n\", (unsigned long long)(x))\n" + body + "\n return 0;\n}\n")
    exe = tmp_path / "probe"
    subprocess.run([gcc, "-O1", f"-DT_VIRTUAL_MEMORY={int(virtual_memory)}", "-I", str(root / "model"),
                    "-I", str(root / "include"), str(src),
                    str(root / "model" / "timing.c"), "-o", str(exe)], check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def test_a_cold_line_goes_through_the_l2_miss_to_dram(tmp_path):
    # issue 0 -> front end 5; Get at 5, miss seen at 11, DRAM slot 16..24, data at the L2 at 54, to the DMA at
    # 61, merged (64 B at 16 B/cycle) at 65, completion lag 2 -> 67.
    assert _probe(tmp_path, "P(mvin(0x10000, 1, 64, 64, 0));") == [67]


def test_a_line_already_in_the_l2_comes_back_after_the_hit_latency(tmp_path):
    # after a fence (host = 67 + 2 = 69) the same line is asked for at 74: hit 12 + merge 4 + lag 2 = 92.
    assert _probe(tmp_path, "mvin(0x10000, 1, 64, 64, 0); tm_fence(); P(mvin(0x10000, 1, 64, 64, 16));") == [92]


def test_dram_delivers_one_line_per_eight_cycles(tmp_path):
    # 16 cold lines: DRAM slots at 16, 24, ..., 136; the last line's data reaches the DMA at 136 + 8 + 30 + 7
    # = 181, is merged at 185 and completes at 187: 8 B/cycle, not the 16 B/cycle the scratchpad could take.
    assert _probe(tmp_path, "P(mvin(0x10000, 16, 64, 64, 0));") == [187]


def test_a_narrow_row_costs_a_whole_line_of_dram_time(tmp_path):
    # 16 rows of 16 bytes in 16 different lines take the same 16 DRAM slots as 16 full lines (merge 1 cycle):
    # 181 + 1 + 2 = 184, although only a quarter of the bytes are useful.
    assert _probe(tmp_path, "P(mvin(0x10000, 16, 16, 64, 0));") == [184]


def test_gets_that_find_their_line_still_being_filled_wait_behind_the_fill(tmp_path):
    # 16 contiguous rows of 16 bytes: 4 lines, 4 Gets each (one a cycle from 5). Line n's first Get misses
    # (slots 16, 24, 32, 40; fills land at 54, 62, 70, 78; its data +7); its other three reach the L2 while
    # the fill is outstanding and are served 38, 48, 58 cycles after it lands (line 0: 92, 102, 112). Merged
    # one row a cycle in request order: line 0 at 62, 93, 103, 113; line 1 114, 115, 116, 121; line 2 122,
    # 123, 124, 129; line 3 130, 131, 132, 137; completion lag 2 -> 139 (91 if they were served with the fill).
    assert _probe(tmp_path, "P(mvin(0x10000, 16, 16, 16, 0));") == [139]


def test_a_full_line_put_needs_no_fetch_but_a_partial_one_allocates_the_line(tmp_path):
    # full: data from 5 + 12 + 4 = 21, row ready at 22, Put at 22, ack 22 + 10 = 32.
    # partial (16 of 64 bytes): the L2 fetches the line first (miss at 28, slot 32, back 70) and acks at 77.
    full = _probe(tmp_path, "mvout(0x20000, 1, 64, 64, 0); P(T.all_done);")
    partial = _probe(tmp_path, "mvout(0x20000, 1, 16, 64, 0); P(T.all_done);")
    assert (full, partial) == ([32], [77])


def test_puts_to_one_line_are_handled_one_per_eight_cycles(tmp_path):
    # four 16-byte rows of one line: the first acks at 77 (write-allocate), the others 8 cycles apart.
    assert _probe(tmp_path, "mvout(0x20000, 4, 16, 16, 0); P(T.all_done);") == [77 + 3 * 8]


def test_full_line_puts_leave_at_sixteen_bytes_a_cycle(tmp_path):
    # 16 full-width accumulator rows (64 B each) to 16 lines: row r's data is ready at 22 + r, but every Put
    # holds the 16-byte bus 4 cycles (chipyard GemminiRocketConfig: WithSystemBusWidth(128); Gemmini's
    # dma_buswidth = 128): Puts at 22, 26, ..., 22 + 15 * 4 = 82, the last acknowledged at 82 + 10 = 92.
    # With a 32-byte bus the last Put would leave at 52 and be acknowledged at 62.
    assert _probe(tmp_path, "mvout(0x20000, 16, 64, 64, 0); P(T.all_done);") == [92]


def test_the_store_queue_runs_one_store_at_a_time(tmp_path):
    # store 1 (full line): reads 5..7, its only Put accepted at 22 -> done 25. Store 2 starts at 25, not at its
    # acceptance (6): its Put is ready at 25 + 16 + 1 = 42 -> done 45.
    assert _probe(tmp_path, "P(mvout(0x20000, 1, 64, 64, 0)); P(mvout(0x30000, 1, 64, 64, 16));") == [25, 45]


def test_a_compute_from_an_idle_mesh_pays_the_issue_latency_and_commits_51_cycles_after_it_starts(tmp_path):
    # accepted at 5, first row in at 8, 16 rows until 24, committed at 8 + 51 = 59; the next compute follows
    # back to back (24..40, commit 75) without the issue latency.
    assert _probe(tmp_path, "P(compute(0, 0, 16)); P(compute(16, 16, 16));") == [59, 75]


def test_a_short_compute_still_streams_the_minimum_rows(tmp_path):
    # 2 rows occupy the mesh for 4: 8 + 4 + 35 = 47.
    assert _probe(tmp_path, "P(compute(0, 0, 2));") == [47]


def test_the_core_stalls_once_ten_commands_wait_in_the_front_end(tmp_path):
    # 27 independent computes: the execute queue (16 entries, freed at commit) takes commands 0..15 at
    # 5..20; command 16 waits for command 0's commit at 59, so command 26 cannot enter the 10-deep front end
    # before 59: the host is at 60 after issuing it, instead of 27.
    body = "for (uint32_t n = 0; n < 27; n++) compute(16 * (n % 32), 16 * (n % 32), 16); P(T.host);"
    assert _probe(tmp_path, body) == [60]


def test_a_fence_waits_for_everything_then_costs_two_cycles(tmp_path):
    assert _probe(tmp_path, "compute(0, 0, 16); tm_fence(); P(T.host);") == [59 + 2]


LOOP_OF_20_COMPUTES = """
  tm_host_begin(); tm_frontend_loop(); tm_loop_begin(0, 0);
  for (uint32_t n = 0; n < 20; n++) {
    tm_read(MEM_SPAD, 16 * n, 16, 1); tm_write(MEM_ACC, 16 * (n % 32), 16, 1);
    tm_schedule(U_EX, 16, T_MESH_LATENCY, 0);
  }
  tm_loop_end(); tm_host_end();
"""


def test_a_raw_command_waits_until_the_loop_has_issued_everything(tmp_path):
    # the loop's computes enter the execute queue at 6..21, then 60, 76, 92, 108 (each waits for the commit of
    # the one 16 back): the loop is idle at 109, so a raw mvin of zeros (1 row) starts at 109 and ends at 110.
    assert _probe(tmp_path, LOOP_OF_20_COMPUTES + "P(mvin(0, 1, 0, 0, 8000));") == [110]


def test_the_next_loop_streams_its_loads_while_the_previous_one_still_computes(tmp_path):
    # a second loop is taken at once (two loop slots): its mvin of zeros starts at 7, long before 109; a
    # third loop waits for the first to have issued everything: it is taken at 109, the cycle after the first
    # loop's last command left.
    second_loop_mvin = """
  tm_host_begin(); tm_frontend_loop(); tm_loop_begin(0, 0);
  tm_write(MEM_SPAD, 8000, 1, 1); P(tm_schedule(U_LOAD, 1, 0, 0));
  tm_loop_end(); tm_host_end();
"""
    third = "tm_host_begin(); tm_frontend_loop(); P(T.next_issue - 1); tm_host_end();"
    assert _probe(tmp_path, LOOP_OF_20_COMPUTES + second_loop_mvin + third) == [8, 109]


# ---- address translation (virtual_memory=True): FrontendTLB.scala + rocket-chip's sectored TLB -----------
# A DMA request whose page is not its client's last one goes to the one shared TLB entry (4 pages of one
# 16 KiB-aligned group); a miss costs T_TLB_MISS_CYCLES = 135 before the request may go out.
TLB_MISSES = "{ uint64_t m[TM_MEMORY_STATS]; tm_memory_stats(m); P(m[5]); }"


def test_a_dma_request_to_an_untranslated_page_waits_for_the_page_table_walk(tmp_path):
    # the Get waits for the walk (5 + 135 = 140), the miss is seen at 146, the next DRAM slot is 152..160, data
    # at the L2 at 190, to the DMA at 197, merged at 201, completion lag 2 -> 203
    assert _probe(tmp_path, "P(mvin(0x10000, 1, 64, 64, 0));", virtual_memory=True) == [203]


def test_the_clients_last_page_is_translated_for_free(tmp_path):
    # the second mvin of the same page pays nothing for translation: fence at 203 + 2, Get at 210, L2 hit 12,
    # merge 4, lag 2 -> 228; one miss in all
    body = "mvin(0x10000, 1, 64, 64, 0); tm_fence(); P(mvin(0x10000, 1, 64, 64, 16));" + TLB_MISSES
    assert _probe(tmp_path, body, virtual_memory=True) == [228, 1]


def test_pages_of_one_16k_group_share_the_tlb_entry_but_another_group_evicts_it(tmp_path):
    same_group = "".join(f"mvin(0x{0x10000 + 0x1000 * p:x}, 1, 64, 64, 0);" for p in (0, 1, 2, 0, 1)) + TLB_MISSES
    alternating = "".join(f"mvin(0x{a:x}, 1, 64, 64, 0);" for a in (0x10000, 0x20000, 0x10000, 0x20000)) + TLB_MISSES
    assert _probe(tmp_path, same_group, virtual_memory=True) == [3]  # pages 0, 1, 2 miss once each
    assert _probe(tmp_path, alternating, virtual_memory=True) == [4]  # every switch of group misses


def test_reader_and_writer_keep_their_own_last_page(tmp_path):
    # the reader keeps 0x10000 in its filter while the writer misses on 0x20000, then both hit their own
    body = ("mvin(0x10000, 1, 64, 64, 0); mvout(0x20000, 1, 64, 64, 0);"
            "mvin(0x10000, 1, 64, 64, 16); mvout(0x20000, 1, 64, 64, 16);" + TLB_MISSES)
    assert _probe(tmp_path, body, virtual_memory=True) == [2]


def test_a_bare_metal_build_translates_nothing(tmp_path):
    assert _probe(tmp_path, "mvin(0x10000, 1, 64, 64, 0); mvin(0x20000, 1, 64, 64, 0);" + TLB_MISSES) == [0]
