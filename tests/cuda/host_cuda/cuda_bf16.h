// Host stand-in for cuda_bf16.h (see cuda_runtime.h here): the 16-bit storage type and the two conversions
// a test solution needs, so a bf16 problem's harness logic runs under g++. Test-only.
#pragma once

#include <cstdint>

#include "speedpatch_element.h"

struct __nv_bfloat16 {
  uint16_t bits;
};
typedef __nv_bfloat16 nv_bfloat16;

inline float __bfloat162float(__nv_bfloat16 b) { return spd::bf16_bits_to_float(b.bits); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16{spd::float_to_bf16_bits(f)}; }
