// Norm kernels: one block per row (or per token-head), fp32 reductions, outputs as documented.
#include "kernels/common.cuh"
#include "kernels/norms.hpp"

namespace cua_s1::kernels {
namespace {

unsigned row_threads(int64_t dim) {
  unsigned threads = 32;
  while (threads < 1024 && threads < dim) threads *= 2;
  return threads;
}

__global__ void layer_norm_kernel(const float* x, int64_t dim, const float* w, const float* b,
                                  float eps, bf16* out) {
  __shared__ float scratch[32];
  const float* row = x + int64_t(blockIdx.x) * dim;
  float sum = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += row[i];
  const float mean = block_sum(sum, scratch) / float(dim);
  float squares = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float d = row[i] - mean;
    squares += d * d;
  }
  const float inv = rsqrtf(block_sum(squares, scratch) / float(dim) + eps);
  bf16* target = out + int64_t(blockIdx.x) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x)
    target[i] = to_bf16((row[i] - mean) * inv * w[i] + b[i]);
}

__global__ void rms_norm_kernel(const float* x, int64_t dim, int64_t ld, const float* w,
                                float eps, bf16* out_bf16, float* out_f32) {
  __shared__ float scratch[32];
  const float* row = x + int64_t(blockIdx.x) * ld;
  float squares = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) squares += row[i] * row[i];
  const float inv = 1.0f / sqrtf(block_sum(squares, scratch) / float(dim) + eps);
  const int64_t base = int64_t(blockIdx.x) * dim;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float value = (row[i] * inv) * (1.0f + w[i]);
    if (out_bf16)
      out_bf16[base + i] = to_bf16(value);
    else
      out_f32[base + i] = value;
  }
}

// One warp per row of `dim` (dim <= 32 * 8 handled by the loop).
__global__ void gated_rms_norm_kernel(const float* o, const float* z, int64_t rows, int64_t dim,
                                      const float* w, float eps, bf16* out) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* values = o + row * dim;
  const float* gate = z + row * dim;
  float squares = 0;
  for (int64_t i = lane; i < dim; i += 32) squares += values[i] * values[i];
  const float inv = 1.0f / sqrtf(warp_sum(squares) / float(dim) + eps);
  for (int64_t i = lane; i < dim; i += 32)
    out[row * dim + i] = to_bf16((values[i] * inv) * w[i] * silu_f(gate[i]));
}

// Block per (token, head), one thread per dim of the head (head_dim <= 1024).
__global__ void head_norm_rope_kernel(head_norm_rope_args a) {
  __shared__ float scratch[32];
  extern __shared__ float normed[];
  const int64_t t = blockIdx.x / a.heads, h = blockIdx.x % a.heads;
  const int d = threadIdx.x;
  const float* source = a.in + t * a.ld_in + h * a.head_stride;
  const float x = d < a.head_dim ? source[d] : 0.0f;
  const float inv = 1.0f / sqrtf(block_sum(x * x, scratch) / float(a.head_dim) + a.eps);
  if (d < a.head_dim) normed[d] = (x * inv) * (1.0f + a.weight[d]);
  __syncthreads();
  if (d >= a.head_dim) return;
  float value = normed[d];
  if (d < 2 * a.half) {
    const int64_t slot = d < a.half ? d : d - a.half;
    const float c = a.cos[t * a.half + slot], s = a.sin[t * a.half + slot];
    value = d < a.half ? normed[d] * c - normed[d + a.half] * s
                       : normed[d] * c + normed[d - a.half] * s;
  }
  a.out[(t * a.heads + h) * a.head_dim + d] = to_bf16(value);
}

}  // namespace

void layer_norm_to_bf16(const float* x, int64_t rows, int64_t dim, const float* weight,
                        const float* bias, float eps, bf16* out, cudaStream_t stream) {
  if (rows == 0) return;
  layer_norm_kernel<<<unsigned(rows), row_threads(dim), 0, stream>>>(x, dim, weight, bias, eps,
                                                                      out);
  check_launch("layer_norm_to_bf16");
}

void rms_norm_zero_centred(const float* x, int64_t rows, int64_t dim, int64_t ld,
                           const float* weight, float eps, bf16* out_bf16, float* out_f32,
                           cudaStream_t stream) {
  if (rows == 0) return;
  rms_norm_kernel<<<unsigned(rows), row_threads(dim), 0, stream>>>(x, dim, ld, weight, eps,
                                                                    out_bf16, out_f32);
  check_launch("rms_norm_zero_centred");
}

void gated_rms_norm_to_bf16(const float* o, const float* z, int64_t rows, int64_t dim,
                            const float* weight, float eps, bf16* out, cudaStream_t stream) {
  if (rows == 0) return;
  constexpr unsigned threads = 256;
  gated_rms_norm_kernel<<<blocks_for(rows, threads / 32), threads, 0, stream>>>(o, z, rows, dim,
                                                                               weight, eps, out);
  check_launch("gated_rms_norm_to_bf16");
}

void head_norm_rope_to_bf16(const head_norm_rope_args& args, cudaStream_t stream) {
  if (args.tokens * args.heads == 0) return;
  if (args.head_dim > 1024 || 2 * args.half > args.head_dim)
    throw std::invalid_argument("head_norm_rope_to_bf16: unsupported head_dim / rotary");
  const unsigned threads = row_threads(args.head_dim);
  head_norm_rope_kernel<<<unsigned(args.tokens * args.heads), threads,
                          size_t(args.head_dim) * sizeof(float), stream>>>(args);
  check_launch("head_norm_rope_to_bf16");
}

}  // namespace cua_s1::kernels
