// Host stand-in for cuda_fp16.h (see cuda_runtime.h here): the 16-bit storage type and the two conversions
// a test solution needs, so an fp16 problem's harness logic runs under g++. Test-only.
#pragma once

#include <cstdint>

#include "speedpatch_element.h"

struct __half {
  uint16_t bits;
};
typedef __half half;

inline float __half2float(__half h) { return spd::half_bits_to_float(h.bits); }
inline __half __float2half(float f) { return __half{spd::float_to_half_bits(f)}; }
