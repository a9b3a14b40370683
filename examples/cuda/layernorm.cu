// Layer normalization over the last dimension: y = (x - mean) / sqrt(var + eps) * gamma + beta.
// One block per row, two shared-memory reductions (mean, then variance).
// Harness above the `speedpatch: solution` line (trusted, never rewritten); the kernel below it.
// speedpatch: precision fp32
#include "speedpatch_timing.cuh"

#include <cmath>

constexpr int ROWS = 4096;
constexpr int COLS = 1024;
constexpr float EPS = 1e-5f;

static void reference(const float* const* in, float* out) {
  const float* gamma = in[1];
  const float* beta = in[2];
  for (int r = 0; r < ROWS; ++r) {
    const float* x = in[0] + size_t(r) * COLS;
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < COLS; ++c) mean += x[c];
    mean /= COLS;
    for (int c = 0; c < COLS; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= COLS;
    double inv = 1.0 / std::sqrt(var + EPS);
    for (int c = 0; c < COLS; ++c) out[size_t(r) * COLS + c] = float((x[c] - mean) * inv * gamma[c] + beta[c]);
  }
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "layernorm";
  s.inputs = {{"x", size_t(ROWS) * COLS, -2.0f, 2.0f}, {"gamma", COLS, 0.5f, 1.5f}, {"beta", COLS, -0.5f, 0.5f}};
  s.output_count = size_t(ROWS) * COLS;
  s.reference = reference;
  s.rtol = 1e-4;
  s.atol = 1e-4;
  s.flops = 8.0 * ROWS * COLS;
  s.bytes = 2.0 * ROWS * COLS * sizeof(float);
  s.shapes = "x 4096x1024, gamma 1024, beta 1024 (fp32)";
  return s;
}

// speedpatch: solution
#define THREADS 256

__device__ float block_sum(float value, float* scratch) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    __syncthreads();
  }
  float total = scratch[0];
  __syncthreads();
  return total;
}

__global__ void layernorm_kernel(const float* x, const float* gamma, const float* beta, float* y, int cols) {
  __shared__ float scratch[THREADS];
  const float* row = x + size_t(blockIdx.x) * cols;
  float* out = y + size_t(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) sum += row[c];
  float mean = block_sum(sum, scratch) / cols;
  float sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) sq += (row[c] - mean) * (row[c] - mean);
  float inv = rsqrtf(block_sum(sq, scratch) / cols + EPS);
  for (int c = threadIdx.x; c < cols; c += THREADS) out[c] = (row[c] - mean) * inv * gamma[c] + beta[c];
}

void launch(const float* const* inputs, float* output) {
  layernorm_kernel<<<ROWS, THREADS>>>(inputs[0], inputs[1], inputs[2], output, COLS);
}
