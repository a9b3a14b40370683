"""Gemmini's performance counters (counter_configure / counter_read / snapshots / reset, upstream names)
read what the model counts; a counter the model does not count stops the run with its name."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

HEAD = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define N 6
static elem_t In[N][DIM][DIM] row_align(1);
static elem_t Out[N][DIM][DIM] row_align(1);

static void copy_blocks(void) {
  for (size_t n = 0; n < N; n++) {
    gemmini_mvin(In[n], n * DIM);
    gemmini_mvout(Out[n], n * DIM);
  }
}

#define CHECK(cond) do { if (!(cond)) { printf("failed: %s\n", #cond); exit(1); } } while (0)

int main() {
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
"""


def run(gemmini_c, body: str):
    return gemmini_c(HEAD + body + "\n  exit(0);\n}\n")()


def test_command_and_byte_counters_count_what_was_issued(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(0, RESERVATION_STATION_LD_COUNT);
  counter_configure(1, RESERVATION_STATION_ST_COUNT);
  counter_configure(2, RDMA_BYTES_REC);
  counter_configure(3, WDMA_BYTES_SENT);
  CHECK(counter_read(0) == 0 && counter_read(2) == 0);
  copy_blocks();
  gemmini_fence();
  CHECK(counter_read(0) == N);
  CHECK(counter_read(1) == N);
  CHECK(counter_read(2) == N * DIM * DIM);
  CHECK(counter_read(3) == N * DIM * DIM);
""")
    assert result.returncode == 0, result.output


def test_unit_busy_counters_grow_with_work(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(0, LOAD_ACTIVE_CYCLE);
  counter_configure(1, STORE_ACTIVE_CYCLE);
  counter_configure(2, EXE_ACTIVE_CYCLE);
  copy_blocks();
  gemmini_fence();
  uint32_t load = counter_read(0), store = counter_read(1), ex = counter_read(2);
  printf("load %u store %u ex %u\n", load, store, ex);
  CHECK(load > 0 && store > 0 && ex == 0);
  copy_blocks();
  gemmini_fence();
  CHECK(counter_read(0) > load && counter_read(1) > store);
""")
    assert result.returncode == 0, result.output


def test_a_snapshot_freezes_reads_until_it_is_reset(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(0, RESERVATION_STATION_LD_COUNT);
  copy_blocks();
  counter_snapshot_take();
  uint32_t frozen = counter_read(0);
  copy_blocks();
  gemmini_fence();
  CHECK(frozen == N && counter_read(0) == frozen);
  counter_snapshot_reset();
  CHECK(counter_read(0) == 2 * N);
""")
    assert result.returncode == 0, result.output


def test_reset_clears_every_counter(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(0, RESERVATION_STATION_LD_COUNT);
  counter_configure(5, RDMA_BYTES_REC);
  copy_blocks();
  counter_reset();
  CHECK(counter_read(0) == 0 && counter_read(5) == 0);
  copy_blocks();
  CHECK(counter_read(0) == N);
""")
    assert result.returncode == 0, result.output


def test_older_programs_three_argument_configure_and_rob_names(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(7, ROB_LD_COUNT, true);
  copy_blocks();
  uint32_t fused;
  gemmini_counter_access(fused, (7 & 0x7) << 4 | 0x4);  /* read and take a snapshot in one command */
  CHECK(fused == N && counter_read(7) == N);
""")
    assert result.returncode == 0, result.output


def test_an_unmodelled_counter_stops_the_run_and_names_it(gemmini_c) -> None:
    result = run(gemmini_c, r"""
  counter_configure(0, DMA_TLB_MISS_CYCLE);
  copy_blocks();
  printf("read %u\n", counter_read(0));
""")
    assert result.returncode != 0
    assert "DMA_TLB_MISS_CYCLE" in result.output and "not modelled" in result.output
    assert "read " not in result.output


def test_an_unmodelled_external_counter_names_it_too(gemmini_c) -> None:
    result = run(gemmini_c, "  counter_configure(1, RDMA_TOTAL_LATENCY);\n")
    assert result.returncode != 0 and "RDMA_TOTAL_LATENCY" in result.output
