// Elementwise kernels: one thread per value, fp32 math, bf16 rounding only where a GEMM reads.
#include "kernels/common.cuh"
#include "kernels/elementwise.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

__global__ void f32_to_bf16_kernel(const float* in, bf16* out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to_bf16(in[i]);
}

__global__ void add_bias_kernel(float* y, int64_t rows, int64_t cols, int64_t ldy,
                                const float* bias) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  y[r * ldy + c] += bias[c];
}

__global__ void gelu_kernel(const float* in, bf16* out, int64_t n, bool erf_form) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to_bf16(erf_form ? gelu_erf_f(in[i]) : gelu_tanh_f(in[i]));
}

__global__ void silu_mul_kernel(const float* gate, const float* up, bf16* out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = to_bf16(silu_f(gate[i]) * up[i]);
}

__global__ void attention_gate_kernel(const float* attended, const float* qg, int64_t tokens,
                                      int64_t heads, int64_t head_dim, bf16* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t width = heads * head_dim;
  if (i >= tokens * width) return;
  const int64_t t = i / width, h = (i % width) / head_dim, d = i % head_dim;
  const float gate = qg[t * 2 * width + h * 2 * head_dim + head_dim + d];
  out[i] = to_bf16(attended[i] * sigmoid_f(gate));
}

}  // namespace

void f32_to_bf16(const float* in, bf16* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  f32_to_bf16_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(in, out, n);
  check_launch("f32_to_bf16");
}

void add_bias(float* y, int64_t rows, int64_t cols, int64_t ldy, const float* bias,
              cudaStream_t stream) {
  if (rows * cols == 0) return;
  add_bias_kernel<<<blocks_for(rows * cols, threads), threads, 0, stream>>>(y, rows, cols, ldy,
                                                                             bias);
  check_launch("add_bias");
}

void gelu_to_bf16(const float* in, bf16* out, int64_t n, gelu_kind kind, cudaStream_t stream) {
  if (n == 0) return;
  gelu_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(in, out, n, kind == gelu_kind::erf);
  check_launch("gelu_to_bf16");
}

void silu_mul_to_bf16(const float* gate, const float* up, bf16* out, int64_t n,
                      cudaStream_t stream) {
  if (n == 0) return;
  silu_mul_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(gate, up, out, n);
  check_launch("silu_mul_to_bf16");
}

void attention_gate_to_bf16(const float* attended, const float* qg, int64_t tokens, int64_t heads,
                            int64_t head_dim, bf16* out, cudaStream_t stream) {
  const int64_t n = tokens * heads * head_dim;
  if (n == 0) return;
  attention_gate_kernel<<<blocks_for(n, threads), threads, 0, stream>>>(attended, qg, tokens,
                                                                         heads, head_dim, out);
  check_launch("attention_gate_to_bf16");
}

}  // namespace cua_s1::kernels
