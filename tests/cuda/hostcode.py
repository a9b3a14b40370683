"""A small fp32 problem whose solutions are host code, for running the kit without a GPU (g++ against the
host stand-in for the CUDA runtime in host_cuda/)."""

from pathlib import Path

HOST_CUDA = Path(__file__).parent / "host_cuda"

PROBLEM = """// speedpatch: precision fp32
#include "speedpatch_timing.cuh"
constexpr int N = 4096;

static void reference(const float* const* in, float* out) {
  for (int i = 0; i < N; ++i) out[i] = 2.0f * in[0][i] + in[1][i];
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "axpy";
  s.inputs = {{"x", N}, {"y", N}};
  s.output_count = N;
  s.reference = reference;
  s.flops = 2.0 * N;
  s.bytes = 12.0 * N;
  s.shapes = "x 4096, y 4096";
  return s;
}

// speedpatch: solution
"""

RIGHT = "void launch(const float* const* in, float* out) {\n  for (int i = 0; i < N; ++i) out[i] = 2.0f * in[0][i] + in[1][i];\n}\n"
WRONG = RIGHT.replace("2.0f *", "3.0f *")
