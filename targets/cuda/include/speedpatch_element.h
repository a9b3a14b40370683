// speedpatch harness kit: float <-> fp16 / bf16 conversions for the HOST side of the harness (plain C++17, no
// CUDA). Inputs are drawn as floats and rounded to the problem's element type before they reach the kernel
// and the reference; the kernel's output is widened back to float before it is compared. These are our own
// bit functions, not cuda_fp16.h's host intrinsics, so the g++ build of the kit's tests (a host stand-in for
// the CUDA runtime) runs exactly the code a real build runs. Rounding: to nearest, ties to even (IEEE 754
// default, and what __float2half / __float2bfloat16 do on the device).
#pragma once

#include <cstdint>
#include <cstring>

namespace spd {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits; largest finite 65504.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t mag = x & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN stays NaN (quiet)
  if (mag >= 0x47800000u) return uint16_t(sign | 0x7C00u);  // >= 65536 (and inf): beyond rounding, inf
  if (mag >= 0x38800000u) {  // >= 2^-14: a normal half
    // Rebias the exponent (127 -> 15) and drop 13 fraction bits, rounding to nearest even. A carry out of
    // the fraction correctly bumps the exponent, up to inf for values from 65520 on.
    uint32_t rebiased = mag - 0x38000000u;
    rebiased += 0x0FFFu + ((rebiased >> 13) & 1u);
    return uint16_t(sign | (rebiased >> 13));
  }
  if (mag <= 0x33000000u) return sign;  // <= 2^-25 (half the smallest subnormal, a tie to even zero): 0
  // A subnormal half counts units of 2^-24: the float's significand shifted right, rounded to nearest even.
  uint32_t significand = (mag & 0x007FFFFFu) | 0x00800000u;
  uint32_t shift = 126u - (mag >> 23);  // 14..24 for exponents from 2^-25 up to 2^-15
  uint32_t units = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (units & 1u))) ++units;  // may reach 0x400: the smallest normal
  return uint16_t(sign | units);
}

inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t fraction = h & 0x3FFu;
  if (exponent == 0x1Fu) return bits_float(sign | 0x7F800000u | (fraction << 13));  // inf, NaN (payload kept)
  if (exponent == 0) {  // zero or subnormal: fraction x 2^-24, exact in float
    float magnitude = float(fraction) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (fraction << 13));
}

// bfloat16: the top half of a float (8 exponent bits, 7 fraction bits), so only the rounding needs care.
inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x0040u);  // NaN stays NaN (quiet)
  x += 0x7FFFu + ((x >> 16) & 1u);  // nearest even; overflow carries into inf
  return uint16_t(x >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

}  // namespace spd
