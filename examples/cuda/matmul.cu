// Naive single-precision matrix multiply C = A * B (square, N x N): one thread per output element.
// Harness above the `speedpatch: solution` line (trusted, never rewritten); the kernel below it.
// speedpatch: precision fp32
#include "speedpatch_timing.cuh"

constexpr int N = 1024;

static void reference(const float* const* in, float* out) {
  const float* A = in[0];
  const float* B = in[1];
  for (int i = 0; i < N; ++i) {
    float* row = out + size_t(i) * N;
    for (int j = 0; j < N; ++j) row[j] = 0.0f;
    for (int k = 0; k < N; ++k) {
      float a = A[size_t(i) * N + k];
      const float* b = B + size_t(k) * N;
      for (int j = 0; j < N; ++j) row[j] += a * b[j];
    }
  }
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "matmul";
  s.inputs = {{"A", size_t(N) * N}, {"B", size_t(N) * N}};
  s.output_count = size_t(N) * N;
  s.reference = reference;
  s.rtol = 1e-4;
  s.atol = 1e-3;  // sums of 1024 products in a different order
  s.flops = 2.0 * N * N * N;
  s.bytes = 3.0 * N * N * sizeof(float);
  s.shapes = "A 1024x1024, B 1024x1024 (fp32)";
  return s;
}

// speedpatch: solution
#define BLOCK 16

__global__ void matmul_kernel(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
  }
}

void launch(const float* const* inputs, float* output) {
  dim3 block(BLOCK, BLOCK);
  dim3 grid((N + BLOCK - 1) / BLOCK, (N + BLOCK - 1) / BLOCK);
  matmul_kernel<<<grid, block>>>(inputs[0], inputs[1], output, N);
}
