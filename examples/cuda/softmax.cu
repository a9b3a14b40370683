// Row-wise softmax of a ROWS x COLS matrix: one block per row, three passes (max, sum of exp, write).
// Harness above the `speedpatch: solution` line (trusted, never rewritten); the kernel below it.
// speedpatch: precision fp32
#include "speedpatch_timing.cuh"

#include <cmath>

constexpr int ROWS = 4096;
constexpr int COLS = 1024;

static void reference(const float* const* in, float* out) {
  for (int r = 0; r < ROWS; ++r) {
    const float* x = in[0] + size_t(r) * COLS;
    double m = x[0];
    for (int c = 1; c < COLS; ++c) m = std::max(m, double(x[c]));
    double sum = 0.0;
    for (int c = 0; c < COLS; ++c) sum += std::exp(double(x[c]) - m);
    for (int c = 0; c < COLS; ++c) out[size_t(r) * COLS + c] = float(std::exp(double(x[c]) - m) / sum);
  }
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "softmax";
  s.inputs = {{"x", size_t(ROWS) * COLS, -4.0f, 4.0f}};
  s.output_count = size_t(ROWS) * COLS;
  s.reference = reference;
  s.rtol = 1e-4;
  s.atol = 1e-6;  // outputs are around 1/COLS: the absolute tolerance must be far below that
  s.flops = 5.0 * ROWS * COLS;
  s.bytes = 2.0 * ROWS * COLS * sizeof(float);
  s.shapes = "x 4096x1024 (fp32), softmax over the last dimension";
  return s;
}

// speedpatch: solution
#define THREADS 256

__global__ void softmax_kernel(const float* x, float* y, int cols) {
  __shared__ float scratch[THREADS];
  const float* row = x + size_t(blockIdx.x) * cols;
  float* out = y + size_t(blockIdx.x) * cols;

  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, row[c]);
  scratch[threadIdx.x] = m;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
    __syncthreads();
  }
  m = scratch[0];
  __syncthreads();

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) sum += expf(row[c] - m);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  sum = scratch[0];

  for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = expf(row[c] - m) / sum;
}

void launch(const float* const* inputs, float* output) {
  softmax_kernel<<<ROWS, THREADS>>>(inputs[0], output, COLS);
}
