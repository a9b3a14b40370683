"""The harness kit's float <-> fp16 / bf16 conversions (speedpatch_element.h), compiled with g++ and run:
known bit patterns, then every 16-bit pattern and a large sample of floats against independent oracles
(numpy's float16 casts; for bf16, the nearest of the two neighbouring bf16 values, ties to even)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from speedpatch.targets.cuda.build import INCLUDE_DIR

pytestmark = pytest.mark.slow  # one g++ build (a few seconds) shared by the module

# Reads float bit patterns (hex, one per line) on stdin; prints, per line, the fp16 and bf16 bits of each,
# then, for every 16-bit pattern, the float bits it widens to as fp16 and as bf16.
DRIVER = r"""
#include "speedpatch_element.h"
#include <cstdio>
using namespace spd;
int main() {
  unsigned int x;
  while (std::scanf("%x", &x) == 1)
    std::printf("n %04x %04x\n", float_to_half_bits(bits_float(x)), float_to_bf16_bits(bits_float(x)));
  for (unsigned int h = 0; h < 65536; ++h)
    std::printf("w %08x %08x\n", float_bits(half_bits_to_float(uint16_t(h))), float_bits(bf16_bits_to_float(uint16_t(h))));
}
"""


def f32(value: float) -> int:
    return int(np.array(value, dtype=np.float32).view(np.uint32))


# (float value, fp16 bits, bf16 bits)
KNOWN = {
    "one": (1.0, 0x3C00, 0x3F80),
    "minus 2.5": (-2.5, 0xC100, 0xC020),
    "0.1": (0.1, 0x2E66, 0x3DCD),
    "minus zero": (-0.0, 0x8000, 0x8000),
    "fp16 max 65504": (65504.0, 0x7BFF, 0x4780),
    "just below the fp16 overflow tie": (65519.996, 0x7BFF, 0x4780),
    "the fp16 overflow tie 65520 goes to inf (even)": (65520.0, 0x7C00, 0x4780),
    "1e6 overflows fp16": (1e6, 0x7C00, 0x4974),
    "minus inf": (float("-inf"), 0xFC00, 0xFF80),
    "smallest fp16 subnormal 2^-24": (2.0**-24, 0x0001, 0x3380),
    "2^-25 ties to even zero": (2.0**-25, 0x0000, 0x3300),
    "1.5 x 2^-25 rounds up to 2^-24": (1.5 * 2.0**-25, 0x0001, 0x3340),
    "3 x 2^-25 ties to even 2 units": (3 * 2.0**-25, 0x0002, 0x33C0),
    "5 x 2^-25 ties to even 2 units": (5 * 2.0**-25, 0x0002, 0x3420),
    "largest fp16 subnormal": (1023 * 2.0**-24, 0x03FF, 0x3880),
    "subnormal rounding up to the smallest normal": (2.0**-14 - 2.0**-26, 0x0400, 0x3880),
    "smallest fp16 normal 2^-14": (2.0**-14, 0x0400, 0x3880),
    "1 + 2^-11 ties to even 1 (fp16)": (1 + 2.0**-11, 0x3C00, 0x3F80),
    "1 + 3 x 2^-11 ties to even 1 + 2^-9 (fp16)": (1 + 3 * 2.0**-11, 0x3C02, 0x3F80),
    "1 + 2^-8 ties to even 1 (bf16)": (1 + 2.0**-8, 0x3C04, 0x3F80),
    "1 + 3 x 2^-8 ties to even 1 + 2^-6 (bf16)": (1 + 3 * 2.0**-8, 0x3C0C, 0x3F82),
    "float max overflows bf16": (3.4028234663852886e38, 0x7C00, 0x7F80),
    "bf16 max": (3.3895313892515355e38, 0x7C00, 0x7F7F),
    "a float subnormal": (1e-40, 0x0000, 0x0001),
}


@pytest.fixture(scope="module")
def conversions(gxx: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp: Path = tmp_path_factory.mktemp("element")
    (tmp / "driver.cc").write_text(DRIVER)
    subprocess.run([gxx, "-std=c++17", "-O1", f"-I{INCLUDE_DIR}", "driver.cc", "-o", "driver"], cwd=tmp, check=True)
    rng = np.random.default_rng(7)
    every = np.arange(65536, dtype=np.uint32)
    sample = np.concatenate([
        every.astype(np.uint16).view(np.float16).astype(np.float32).view(np.uint32),  # each fp16 value, widened
        every << 16,  # each bf16 value, widened
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),  # every exponent, NaNs included
        rng.uniform(-70000, 70000, 50_000).astype(np.float32).view(np.uint32),  # the fp16 range, densely
        np.array([f32(v) for v, _, _ in KNOWN.values()] + [0x7FC00000, 0xFFFFFFFF, 0x7F800001], dtype=np.uint32),
    ])
    stdin = "\n".join(f"{x:x}" for x in sample) + "\n"
    out = subprocess.run([str(tmp / "driver")], input=stdin, capture_output=True, text=True, check=True).stdout
    narrow = [line.split()[1:] for line in out.splitlines() if line.startswith("n ")]
    wide = [line.split()[1:] for line in out.splitlines() if line.startswith("w ")]
    return {
        "sample": sample,
        "half": np.array([int(h, 16) for h, _ in narrow], dtype=np.uint16),
        "bf16": np.array([int(b, 16) for _, b in narrow], dtype=np.uint16),
        "half_to_float": np.array([int(h, 16) for h, _ in wide], dtype=np.uint32),
        "bf16_to_float": np.array([int(b, 16) for _, b in wide], dtype=np.uint32),
    }


def _narrowed(conversions: dict, value: float) -> tuple[int, int]:
    index = int(np.nonzero(conversions["sample"] == f32(value))[0][0])
    return int(conversions["half"][index]), int(conversions["bf16"][index])


@pytest.mark.parametrize("case", list(KNOWN))
def test_known_values_round_to_known_bit_patterns(case: str, conversions: dict) -> None:
    value, half, bf16 = KNOWN[case]
    assert _narrowed(conversions, value) == (half, bf16), [hex(b) for b in _narrowed(conversions, value)]


def test_nan_stays_nan_in_both_formats(conversions: dict) -> None:
    for nan in (0x7FC00000, 0xFFFFFFFF, 0x7F800001):  # quiet, all ones, signalling with the lowest payload bit
        index = int(np.nonzero(conversions["sample"] == nan)[0][0])
        half, bf16 = int(conversions["half"][index]), int(conversions["bf16"][index])
        assert half & 0x7C00 == 0x7C00 and half & 0x03FF, hex(half)
        assert bf16 & 0x7F80 == 0x7F80 and bf16 & 0x007F, hex(bf16)


def test_all_ones_bytes_are_nan_in_every_element_type(conversions: dict) -> None:
    # The harness fills the output with 0xFF bytes so that an element a kernel never writes fails the check.
    assert np.isnan(conversions["half_to_float"][0xFFFF:].view(np.float32)[0])
    assert np.isnan(conversions["bf16_to_float"][0xFFFF:].view(np.float32)[0])
    assert np.isnan(np.array([0xFFFFFFFF], dtype=np.uint32).view(np.float32)[0])


def test_every_fp16_pattern_widens_like_numpy(conversions: dict) -> None:
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    got = conversions["half_to_float"].view(np.float32)
    nan = np.isnan(every)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), every[~nan].view(np.uint32))  # bits: signed zeros too


def test_floats_narrow_to_fp16_like_numpy(conversions: dict) -> None:
    floats = conversions["sample"].view(np.float32)
    with np.errstate(over="ignore"):
        want = floats.astype(np.float16)
    nan = np.isnan(floats)
    assert np.array_equal(conversions["half"][~nan], want[~nan].view(np.uint16))


def test_every_fp16_and_bf16_value_survives_a_round_trip_through_float(conversions: dict) -> None:
    # Widening is exact, so narrowing the widened value must give the very bits back (NaNs aside). The sample
    # starts with the widened fp16 values, then the widened bf16 values, in pattern order.
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    for fmt, offset, exponent in (("half", 0, 0x7C00), ("bf16", 65536, 0x7F80)):
        fraction = 0x7FFF & ~exponent
        not_nan = ((every & exponent) != exponent) | ((every & fraction) == 0)
        narrowed = conversions[fmt][offset : offset + 65536]
        assert np.array_equal(narrowed[not_nan], every[not_nan])


def _nearest_bf16(bits: np.ndarray) -> np.ndarray:
    """Finite floats to bf16 by distance: the two bf16 values around x, the closer one, ties to the even."""
    x = bits.view(np.float32).astype(np.float64)
    low = (bits & np.uint32(0xFFFF0000)).view(np.float32).astype(np.float64)  # toward zero
    high_bits = (bits & np.uint32(0xFFFF0000)) + np.uint32(0x10000)  # away from zero (may become inf)
    high = high_bits.view(np.float32).astype(np.float64)
    high = np.where(np.isinf(high), np.sign(x) * 2.0**128, high)  # past the largest bf16: inf, at 2^128's place
    with np.errstate(invalid="ignore"):
        d_low, d_high = np.abs(x - low), np.abs(high - x)
    low_is_even = ((bits >> 16) & 1) == 0
    pick_high = (d_high < d_low) | ((d_high == d_low) & ~low_is_even)
    return np.where(pick_high, high_bits >> 16, bits >> 16).astype(np.uint16)


def test_floats_narrow_to_bf16_as_the_nearest_value_ties_to_even(conversions: dict) -> None:
    floats = conversions["sample"].view(np.float32)
    finite = np.isfinite(floats)
    want = _nearest_bf16(conversions["sample"][finite])
    assert np.array_equal(conversions["bf16"][finite], want)
