// Norm kernels: one block per row (or per token-head), fp32 reductions, outputs as documented.
// LayerNorm and RMSNorm keep the row in registers (128 threads, float4 loads) when its width
// is a multiple of 4 up to 4096; other widths take a block-strided loop.
#include <initializer_list>

#include "kernels/common.cuh"
#include "kernels/norms.hpp"

namespace cua_s1::kernels {
namespace {

unsigned row_threads(int64_t dim) {
  unsigned threads = 32;
  while (threads < 1024 && threads < dim) threads *= 2;
  return threads;
}

constexpr int register_row_threads = 128;
constexpr int max_row_quads = 8;  // float4 per thread: rows up to 4096 wide

__device__ __forceinline__ void store4(bf16* out, float a, float b, float c, float d) {
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(a, b), __floats2bfloat162_rn(c, d)};
  *reinterpret_cast<uint2*>(out) = *reinterpret_cast<const uint2*>(pair);
}

// Row r's values, quads q = threadIdx.x + k * 128 (k < quads), zero past the row's end.
template <int quads>
struct row_registers {
  float4 v[quads];
  __device__ __forceinline__ void load(const float* row, int dim) {
#pragma unroll
    for (int k = 0; k < quads; ++k) {
      const int q = int(threadIdx.x) + k * register_row_threads;
      v[k] = 4 * q < dim ? *reinterpret_cast<const float4*>(row + 4 * q)
                         : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  __device__ __forceinline__ float sum() const {
    float s = 0;
#pragma unroll
    for (int k = 0; k < quads; ++k) s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    return s;
  }
  __device__ __forceinline__ float squares(float centre, int dim) const {
    float s = 0;
#pragma unroll
    for (int k = 0; k < quads; ++k) {
      if (4 * (int(threadIdx.x) + k * register_row_threads) >= dim) continue;
      const float a = v[k].x - centre, b = v[k].y - centre, c = v[k].z - centre,
                  d = v[k].w - centre;
      s += (a * a + b * b) + (c * c + d * d);
    }
    return s;
  }
};

template <int quads>
__global__ void __launch_bounds__(register_row_threads)
    layer_norm_registers_kernel(const float* x, int dim, const float* w, const float* b, float eps,
                                bf16* out, int64_t ldo) {
  __shared__ float scratch[32];
  row_registers<quads> row;
  row.load(x + int64_t(blockIdx.x) * dim, dim);
  const float mean = block_sum(row.sum(), scratch) / float(dim);
  const float inv = rsqrtf(block_sum(row.squares(mean, dim), scratch) / float(dim) + eps);
  bf16* target = out + int64_t(blockIdx.x) * ldo;
#pragma unroll
  for (int k = 0; k < quads; ++k) {
    const int i = 4 * (int(threadIdx.x) + k * register_row_threads);
    if (i >= dim) continue;
    const float4 wv = *reinterpret_cast<const float4*>(w + i);
    const float4 bv = *reinterpret_cast<const float4*>(b + i);
    store4(target + i, (row.v[k].x - mean) * inv * wv.x + bv.x,
           (row.v[k].y - mean) * inv * wv.y + bv.y, (row.v[k].z - mean) * inv * wv.z + bv.z,
           (row.v[k].w - mean) * inv * wv.w + bv.w);
  }
}

template <int quads>
__global__ void __launch_bounds__(register_row_threads)
    rms_norm_registers_kernel(const float* x, int dim, int64_t ld, const float* w, float eps,
                              bf16* out_bf16, float* out_f32) {
  __shared__ float scratch[32];
  row_registers<quads> row;
  row.load(x + int64_t(blockIdx.x) * ld, dim);
  const float inv = 1.0f / sqrtf(block_sum(row.squares(0.0f, dim), scratch) / float(dim) + eps);
  const int64_t base = int64_t(blockIdx.x) * dim;
#pragma unroll
  for (int k = 0; k < quads; ++k) {
    const int i = 4 * (int(threadIdx.x) + k * register_row_threads);
    if (i >= dim) continue;
    const float4 wv = *reinterpret_cast<const float4*>(w + i);
    const float4 value =
        make_float4((row.v[k].x * inv) * (1.0f + wv.x), (row.v[k].y * inv) * (1.0f + wv.y),
                    (row.v[k].z * inv) * (1.0f + wv.z), (row.v[k].w * inv) * (1.0f + wv.w));
    if (out_bf16)
      store4(out_bf16 + base + i, value.x, value.y, value.z, value.w);
    else
      *reinterpret_cast<float4*>(out_f32 + base + i) = value;
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Quads per thread for a register-resident row, or 0 when the row cannot be (width not a
// multiple of 4, wider than 4096, or an operand not 16-byte aligned).
int row_quads(int64_t dim, int64_t ld, std::initializer_list<const void*> operands) {
  if (dim % 4 || ld % 4 || dim > 4 * register_row_threads * max_row_quads) return 0;
  for (const void* p : operands)
    if (p && !aligned16(p)) return 0;
  return int((dim / 4 + register_row_threads - 1) / register_row_threads);
}

// Launches kernel<quads>(args...) with `rows` blocks of 128 threads.
template <template <int> class Launch, class... Args>
void launch_registers(int quads, unsigned rows, cudaStream_t stream, Args... args) {
  switch (quads) {
    case 1: Launch<1>::run(rows, stream, args...); break;
    case 2: Launch<2>::run(rows, stream, args...); break;
    case 3: Launch<3>::run(rows, stream, args...); break;
    case 4: Launch<4>::run(rows, stream, args...); break;
    case 5: Launch<5>::run(rows, stream, args...); break;
    case 6: Launch<6>::run(rows, stream, args...); break;
    case 7: Launch<7>::run(rows, stream, args...); break;
    default: Launch<8>::run(rows, stream, args...); break;
  }
}

template <int quads>
struct layer_norm_launch {
  template <class... Args>
  static void run(unsigned rows, cudaStream_t stream, Args... args) {
    layer_norm_registers_kernel<quads><<<rows, register_row_threads, 0, stream>>>(args...);
  }
};
template <int quads>
struct rms_norm_launch {
  template <class... Args>
  static void run(unsigned rows, cudaStream_t stream, Args... args) {
    rms_norm_registers_kernel<quads><<<rows, register_row_threads, 0, stream>>>(args...);
  }
};

__global__ void layer_norm_kernel(const float* x, int64_t dim, const float* w, const float* b,
                                  float eps, bf16* out, int64_t ldo) {
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
  bf16* target = out + int64_t(blockIdx.x) * ldo;
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
__global__ void gated_rms_norm_kernel(const float* o, const float* z, int64_t ld_z,
                                      int64_t row_groups, int64_t rows, int64_t dim,
                                      const float* w, float eps, bf16* out) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* values = o + row * dim;
  const float* gate = z + (row / row_groups) * ld_z + (row % row_groups) * dim;
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
                        const float* bias, float eps, bf16* out, cudaStream_t stream, int64_t ldo) {
  if (rows == 0) return;
  if (ldo == 0) ldo = dim;
  // bf16 rows stored four values (8 bytes) at a time: ldo a multiple of 4 keeps them aligned
  if (const int quads = ldo % 4 ? 0 : row_quads(dim, dim, {x, weight, bias, out}))
    launch_registers<layer_norm_launch>(quads, unsigned(rows), stream, x, int(dim), weight, bias,
                                        eps, out, ldo);
  else
    layer_norm_kernel<<<unsigned(rows), row_threads(dim), 0, stream>>>(x, dim, weight, bias, eps,
                                                                        out, ldo);
  check_launch("layer_norm_to_bf16");
}

void rms_norm_zero_centred(const float* x, int64_t rows, int64_t dim, int64_t ld,
                           const float* weight, float eps, bf16* out_bf16, float* out_f32,
                           cudaStream_t stream) {
  if (rows == 0) return;
  if (const int quads = row_quads(dim, ld, {x, weight, out_bf16, out_f32}))
    launch_registers<rms_norm_launch>(quads, unsigned(rows), stream, x, int(dim), ld, weight, eps,
                                      out_bf16, out_f32);
  else
    rms_norm_kernel<<<unsigned(rows), row_threads(dim), 0, stream>>>(x, dim, ld, weight, eps,
                                                                      out_bf16, out_f32);
  check_launch("rms_norm_zero_centred");
}

void gated_rms_norm_to_bf16(const float* o, const float* z, int64_t ld_z, int64_t row_groups,
                            int64_t rows, int64_t dim, const float* weight, float eps, bf16* out,
                            cudaStream_t stream) {
  if (rows == 0) return;
  if (row_groups <= 0 || ld_z < row_groups * dim)
    throw std::invalid_argument("gated_rms_norm_to_bf16: z rows narrower than their groups");
  constexpr unsigned threads = 256;
  gated_rms_norm_kernel<<<blocks_for(rows, threads / 32), threads, 0, stream>>>(
      o, z, ld_z, row_groups, rows, dim, weight, eps, out);
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
