// Row sums of a ROWS x COLS matrix (a reduction): one block per row, a shared-memory tree inside the block.
// Harness above the `speedpatch: solution` line (trusted, never rewritten); the kernel below it.
// speedpatch: precision fp32
#include "speedpatch_timing.cuh"

constexpr int ROWS = 2048;
constexpr int COLS = 8192;

static void reference(const float* const* in, float* out) {
  for (int r = 0; r < ROWS; ++r) {
    double sum = 0.0;
    for (int c = 0; c < COLS; ++c) sum += in[0][size_t(r) * COLS + c];
    out[r] = float(sum);
  }
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "row_sum";
  s.inputs = {{"x", size_t(ROWS) * COLS}};
  s.output_count = ROWS;
  s.reference = reference;
  s.rtol = 1e-4;
  s.atol = 1e-3;  // float partial sums of 8192 terms in any order
  s.flops = double(ROWS) * COLS;
  s.bytes = (double(ROWS) * COLS + ROWS) * sizeof(float);
  s.shapes = "x 2048x8192 (fp32) -> 2048";
  return s;
}

// speedpatch: solution
#define THREADS 256

__global__ void row_sum_kernel(const float* x, float* out, int cols) {
  __shared__ float partial[THREADS];
  const float* row = x + size_t(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += THREADS) sum += row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

void launch(const float* const* inputs, float* output) {
  row_sum_kernel<<<ROWS, THREADS>>>(inputs[0], output, COLS);
}
