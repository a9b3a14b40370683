// Naive half-precision matrix multiply C = A * B (square, N x N): fp16 inputs and output, fp32 accumulation,
// one thread per output element. Harness above the `speedpatch: solution` line (trusted, never rewritten);
// the kernel below it.
//
// SPEEDPATCH_ELEMENT makes every buffer __half: launch() takes `const __half* const*` and `__half*`. The
// inputs are drawn as floats and rounded to fp16; the reference below gets those rounded values as floats.
// No precision directive: the floor is the element's own, fp16, so the search may compute in fp16 and use
// fp16 tensor cores. `// speedpatch: precision fp32` would still let it load, store and convert halves, but
// reject half arithmetic intrinsics (__hfma, __hadd2, ...).
#define SPEEDPATCH_ELEMENT __half
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
  s.name = "matmul_fp16";
  s.inputs = {{"A", size_t(N) * N}, {"B", size_t(N) * N}};
  s.output_count = size_t(N) * N;
  s.reference = reference;
  // fp16 keeps 11 significant bits: storing the result alone costs up to 2^-11 (~5e-4) relative. 1e-2 (the
  // common fp16 tolerance) leaves room for any fp32 summation order, while fp16 accumulation over K = 1024
  // (errors up to ~0.3 on outputs of typical size ~9) fails on about one output in ten.
  s.rtol = 1e-2;
  s.atol = 1e-2;
  s.flops = 2.0 * N * N * N;
  s.bytes = 3.0 * N * N * sizeof(spd::elem);
  s.shapes = "A 1024x1024, B 1024x1024 (fp16, fp32 accumulation)";
  return s;
}

// speedpatch: solution
#define BLOCK 16

__global__ void matmul_kernel(const __half* A, const __half* B, __half* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += __half2float(A[row * n + k]) * __half2float(B[k * n + col]);
    C[row * n + col] = __float2half(acc);
  }
}

void launch(const __half* const* inputs, __half* output) {
  dim3 block(BLOCK, BLOCK);
  dim3 grid((N + BLOCK - 1) / BLOCK, (N + BLOCK - 1) / BLOCK);
  matmul_kernel<<<grid, block>>>(inputs[0], inputs[1], output, N);
}
