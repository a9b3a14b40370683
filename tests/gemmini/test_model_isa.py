"""Support for the model tests (no tests here): Gemmini instruction encoders, a numpy reference of the
numerics, and a small driver program that replays an instruction script against the native model.

The driver reads commands on stdin, so one build serves many random cases:
  m SIZE               allocate a zeroed, 64-byte aligned DRAM arena
  w OFF HEX            write bytes at arena + OFF
  i FUNCT RS1 RS2      issue a RoCC instruction; an operand written @OFF is the address arena + OFF
  f                    fence;   c   print "cycles N";   r OFF LEN   print the bytes at arena + OFF as hex
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

DIM = 16
GARBAGE = 0xFFFFFFFF
ACC = 1 << 31
ACCUMULATE = 1 << 30
FULL = 1 << 29

CONFIG, MVIN2, MVIN, MVOUT, COMPUTE_PRELOADED, COMPUTE_ACCUMULATE, PRELOAD, FLUSH = range(8)
LOOP_WS, LW_BOUNDS, LW_ADDRS_AB, LW_ADDRS_DC, LW_STRIDES_AB, LW_STRIDES_DC, MVIN3 = range(8, 15)
LOOP_CONV_WS = 15
OS, WS = 0, 1

DRIVER_SOURCE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gemmini_params.h>
#include "xcustom.h"

static unsigned char *arena;

static uint64_t operand(const char *s) {
  if (s[0] == '@') return (uint64_t)(uintptr_t)(arena + strtoull(s + 1, NULL, 0));
  return strtoull(s, NULL, 0);
}

int main(void) {
  char cmd[8];
  while (scanf("%7s", cmd) == 1) {
    if (!strcmp(cmd, "m")) {
      size_t n;
      if (scanf("%zu", &n) != 1) return 2;
      n = (n + 63) / 64 * 64;
      arena = aligned_alloc(64, n);
      memset(arena, 0, n);
    } else if (!strcmp(cmd, "w")) {
      size_t off;
      char *hex = NULL;
      if (scanf("%zu %ms", &off, &hex) != 2) return 2;
      for (size_t i = 0; hex[2 * i]; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        arena[off + i] = (unsigned char)v;
      }
      free(hex);
    } else if (!strcmp(cmd, "i")) {
      unsigned long long f;
      char a[64], b[64];
      if (scanf("%llu %63s %63s", &f, a, b) != 3) return 2;
      ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, operand(a), operand(b), f);
    } else if (!strcmp(cmd, "f")) {
      gemmini_model_fence();
    } else if (!strcmp(cmd, "c")) {
      printf("cycles %llu\n", (unsigned long long)gemmini_model_cycles());
    } else if (!strcmp(cmd, "r")) {
      size_t off, n;
      if (scanf("%zu %zu", &off, &n) != 2) return 2;
      printf("bytes ");
      for (size_t i = 0; i < n; i++) printf("%02x", arena[off + i]);
      printf("\n");
    } else {
      return 2;
    }
  }
  return 0;
}
"""


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def operand(addr: int, cols: int, rows: int) -> int:
    return (rows << 48) | (cols << 32) | (addr & 0xFFFFFFFF)


def config_ex(dataflow: int = WS, act: int = 0, shift: int = 0, a_t: int = 0, b_t: int = 0,
              a_stride: int = 1, c_stride: int = 1) -> tuple[int, int, int]:
    rs1 = (f32_bits(1.0) << 32) | (a_stride << 16) | (b_t << 9) | (a_t << 8) | (act << 3) | (dataflow << 2)
    return CONFIG, rs1, (c_stride << 48) | shift


def config_ld(stride: int, scale: float = 1.0, shrunk: int = 0, slot: int = 0, block_stride: int = DIM,
              pixels: int = 1) -> tuple[int, int, int]:
    rs1 = (f32_bits(scale) << 32) | (block_stride << 16) | (pixels << 8) | (slot << 3) | (shrunk << 2) | 1
    return CONFIG, rs1, stride


def config_st(stride: int, act: int = 0, scale: float = 1.0) -> tuple[int, int, int]:
    return CONFIG, (act << 2) | 2, (f32_bits(scale) << 32) | stride


@dataclass
class Dram:
    """An address inside the driver's arena."""

    offset: int

    def __str__(self) -> str:
        return f"@{self.offset}"


@dataclass
class Script:
    size: int = 1 << 20
    lines: list[str] = field(default_factory=list)
    top: int = 0

    def __post_init__(self) -> None:
        self.lines.append(f"m {self.size}")

    def alloc(self, nbytes: int) -> Dram:
        """A fresh, 64-byte aligned region of the arena."""
        off = self.top
        self.top = (self.top + nbytes + 63) // 64 * 64
        assert self.top <= self.size
        return Dram(off)

    def put(self, array: np.ndarray) -> Dram:
        data = np.ascontiguousarray(array).tobytes()
        where = self.alloc(len(data))
        self.lines.append(f"w {where.offset} {data.hex()}")
        return where

    def rocc(self, funct: int, rs1: int | Dram, rs2: int | Dram) -> None:
        self.lines.append(f"i {funct} {rs1} {rs2}")

    def issue(self, insn: tuple[int, int, int]) -> None:
        self.rocc(*insn)

    def fence(self) -> None:
        self.lines.append("f")

    def cycles(self) -> None:
        self.lines.append("c")

    def read(self, where: Dram, nbytes: int) -> None:
        self.lines.append(f"r {where.offset} {nbytes}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def parse_reads(output: str) -> list[bytes]:
    return [bytes.fromhex(line.split()[1]) for line in output.splitlines() if line.startswith("bytes ")]


def parse_cycles(output: str) -> list[int]:
    return [int(line.split()[1]) for line in output.splitlines() if line.startswith("cycles ")]


# ---- numpy reference of the numerics ------------------------------------------------------------------

def scale_round_saturate(x: np.ndarray, scale: float, lo: int = -128, hi: int = 127) -> np.ndarray:
    """float32 product, round half to even, saturate: what mvin scaling and accumulator read-out do."""
    y = np.rint(x.astype(np.float32) * np.float32(scale))
    return np.clip(y, lo, hi).astype(np.int64)


def rounding_shift(x: np.ndarray, shift: int) -> np.ndarray:
    """Right shift rounding to nearest, ties to even (exact integer arithmetic)."""
    x = x.astype(np.int64)
    if shift == 0:
        return x
    q = x >> shift
    rem = x - (q << shift)
    half = 1 << (shift - 1)
    return q + ((rem > half) | ((rem == half) & (q & 1 == 1))).astype(np.int64)


def relu(x: np.ndarray, act: int) -> np.ndarray:
    return np.maximum(x, 0) if act == 1 else x


# ---- hardware loops --------------------------------------------------------------------------------

def loop_ws(s: Script, I: int, J: int, K: int, pad_I: int, pad_J: int, pad_K: int,  # noqa: E741
            A: Dram | int, B: Dram | int, D: Dram | int, C: Dram | int,
            A_stride: int, B_stride: int, D_stride: int, C_stride: int,
            a_t: int = 0, b_t: int = 0, full_C: int = 0, low_D: int = 0, ex_accumulate: int = 0,
            act: int = 0, a_spad_id: int = 0, b_spad_id: int = 0, is_resadd: int = 0) -> None:
    """LOOP_WS and its five configuration instructions, bounds in DIM tiles."""
    s.rocc(LW_BOUNDS, (pad_K << 32) | (pad_J << 16) | pad_I, (K << 32) | (J << 16) | I)
    s.rocc(LW_ADDRS_AB, A, B)
    s.rocc(LW_ADDRS_DC, D, C)
    s.rocc(LW_STRIDES_AB, A_stride, B_stride)
    s.rocc(LW_STRIDES_DC, D_stride, C_stride)
    rs1 = (a_spad_id << 18) | (b_spad_id << 16) | (act << 8) | (low_D << 2) | (full_C << 1) | ex_accumulate
    s.rocc(LOOP_WS, rs1, (is_resadd << 2) | (b_t << 1) | a_t)


def tiles(n: int) -> tuple[int, int]:
    """(tiles of DIM, padding of the last tile) for a dimension of n elements."""
    t = (n + DIM - 1) // DIM
    return t, t * DIM - n
