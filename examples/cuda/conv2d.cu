// Direct 2D convolution, NCHW, 3x3 filter, stride 1, zero padding 1: one thread per output element.
// Harness above the `speedpatch: solution` line (trusted, never rewritten); the kernel below it.
// speedpatch: precision fp32
#include "speedpatch_timing.cuh"

constexpr int BATCH = 2, C_IN = 16, C_OUT = 32, H = 128, W = 128, K = 3, PAD = 1;

static void reference(const float* const* in, float* out) {
  const float* x = in[0];
  const float* w = in[1];
  for (int n = 0; n < BATCH; ++n)
    for (int co = 0; co < C_OUT; ++co)
      for (int h = 0; h < H; ++h)
        for (int x0 = 0; x0 < W; ++x0) {
          float acc = 0.0f;
          for (int ci = 0; ci < C_IN; ++ci)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                int ih = h + kh - PAD, iw = x0 + kw - PAD;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((size_t(n) * C_IN + ci) * H + ih) * W + iw] * w[((size_t(co) * C_IN + ci) * K + kh) * K + kw];
              }
          out[((size_t(n) * C_OUT + co) * H + h) * W + x0] = acc;
        }
}

static spd::Spec problem() {
  spd::Spec s;
  s.name = "conv2d";
  s.inputs = {{"x", size_t(BATCH) * C_IN * H * W}, {"weight", size_t(C_OUT) * C_IN * K * K}};
  s.output_count = size_t(BATCH) * C_OUT * H * W;
  s.reference = reference;
  s.rtol = 1e-4;
  s.atol = 1e-4;
  s.flops = 2.0 * BATCH * C_OUT * H * W * C_IN * K * K;
  s.bytes = (double(BATCH) * C_IN * H * W + double(C_OUT) * C_IN * K * K + double(BATCH) * C_OUT * H * W) * sizeof(float);
  s.shapes = "x 2x16x128x128, weight 32x16x3x3 (NCHW, fp32), stride 1, pad 1";
  return s;
}

// speedpatch: solution
#define BLOCK_X 16
#define BLOCK_Y 16

__global__ void conv2d_kernel(const float* x, const float* w, float* y) {
  int ox = blockIdx.x * blockDim.x + threadIdx.x;
  int oy = blockIdx.y * blockDim.y + threadIdx.y;
  int n = blockIdx.z / C_OUT, co = blockIdx.z % C_OUT;
  if (ox >= W || oy >= H) return;
  float acc = 0.0f;
  for (int ci = 0; ci < C_IN; ++ci)
    for (int kh = 0; kh < K; ++kh)
      for (int kw = 0; kw < K; ++kw) {
        int ih = oy + kh - PAD, iw = ox + kw - PAD;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        acc += x[((n * C_IN + ci) * H + ih) * W + iw] * w[((co * C_IN + ci) * K + kh) * K + kw];
      }
  y[((n * C_OUT + co) * H + oy) * W + ox] = acc;
}

void launch(const float* const* inputs, float* output) {
  dim3 block(BLOCK_X, BLOCK_Y);
  dim3 grid((W + BLOCK_X - 1) / BLOCK_X, (H + BLOCK_Y - 1) / BLOCK_Y, BATCH * C_OUT);
  conv2d_kernel<<<grid, block>>>(inputs[0], inputs[1], output);
}
