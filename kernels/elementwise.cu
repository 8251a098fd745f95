// Elementwise kernels: fp32 math, bf16 rounding only where a GEMM reads; four values per thread
// where the operands allow float4 loads.
#include <initializer_list>
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/elementwise.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

// Applies op to n values, four per thread from float4 loads when every operand is aligned for it
// (the usual case: whole buffers), else one per thread.
template <class Op>
__global__ void map_kernel(int64_t n, bool vectorized, Op op) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (!vectorized) {
    if (i < n) op.one(i);
    return;
  }
  if (4 * i + 3 < n)
    op.four(4 * i);
  else
    for (int64_t j = 4 * i; j < n; ++j) op.one(j);
}

__device__ __forceinline__ void store4(bf16* out, int64_t i, float a, float b, float c, float d) {
  __nv_bfloat162 pair[2] = {__floats2bfloat162_rn(a, b), __floats2bfloat162_rn(c, d)};
  *reinterpret_cast<uint2*>(out + i) = *reinterpret_cast<const uint2*>(pair);
}
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

struct to_bf16_op {
  const float* in;
  bf16* out;
  __device__ void one(int64_t i) const { out[i] = to_bf16(in[i]); }
  __device__ void four(int64_t i) const {
    const float4 v = load4(in + i);
    store4(out, i, v.x, v.y, v.z, v.w);
  }
};

template <bool erf_form>
struct gelu_op {
  const float* in;
  bf16* out;
  __device__ static float f(float x) { return erf_form ? gelu_erf_f(x) : gelu_tanh_f(x); }
  __device__ void one(int64_t i) const { out[i] = to_bf16(f(in[i])); }
  __device__ void four(int64_t i) const {
    const float4 v = load4(in + i);
    store4(out, i, f(v.x), f(v.y), f(v.z), f(v.w));
  }
};

__device__ __forceinline__ float4 load4(const bf16* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 low = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 high = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(low.x, low.y, high.x, high.y);
}
__device__ __forceinline__ float value_of(float v) { return v; }
__device__ __forceinline__ float value_of(bf16 v) { return __bfloat162float(v); }

// SiLU(gate) * up in fp32 from fp32 or bf16 operands, rounded once to bf16.
template <class T>
struct silu_mul_op {
  const T* gate;
  const T* up;
  bf16* out;
  __device__ void one(int64_t i) const { out[i] = to_bf16(silu_f(value_of(gate[i])) * value_of(up[i])); }
  __device__ void four(int64_t i) const {
    const float4 g = load4(gate + i), u = load4(up + i);
    store4(out, i, silu_f(g.x) * u.x, silu_f(g.y) * u.y, silu_f(g.z) * u.z, silu_f(g.w) * u.w);
  }
};

// The grid's y extent for `rows` rows: one block row each, at most the launch limit (the
// kernels below then stride over the rest).
constexpr int64_t max_grid_rows = 65535;
unsigned grid_rows(int64_t rows) { return unsigned(rows < max_grid_rows ? rows : max_grid_rows); }

// silu_mul_op over strided rows: blockIdx.y is the first row, then every gridDim.y-th.
template <class T>
__global__ void silu_mul_rows_kernel(const T* gate, const T* up, int64_t ld, bf16* out,
                                     int64_t rows, int64_t cols, bool vectorized) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const silu_mul_op<T> op{gate + row * ld, up + row * ld, out + row * cols};
    if (!vectorized) {
      if (i < cols) op.one(i);
    } else if (4 * i < cols) {
      op.four(4 * i);
    }
  }
}

// gelu_op over rows (input rows `cols` apart, output rows ldo apart): blockIdx.y is the first
// row, then every gridDim.y-th.
template <bool erf_form>
__global__ void gelu_rows_kernel(const float* in, int64_t rows, int64_t cols, bf16* out,
                                 int64_t ldo, bool vectorized) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const gelu_op<erf_form> op{in + row * cols, out + row * ldo};
    if (!vectorized) {
      if (i < cols) op.one(i);
    } else if (4 * i < cols) {
      op.four(4 * i);
    }
  }
}

bool aligned_for_four(std::initializer_list<const void*> operands) {
  for (const void* p : operands)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

template <class Op>
void launch_map(int64_t n, bool vectorized, Op op, cudaStream_t stream) {
  const int64_t items = vectorized ? (n + 3) / 4 : n;
  map_kernel<<<blocks_for(items, threads), threads, 0, stream>>>(n, vectorized, op);
}

__global__ void add_bias_kernel(float* y, int64_t cols, int64_t ldy, const float* bias) {
  const int64_t c = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c < cols) y[int64_t(blockIdx.x) * ldy + c] += bias[c];
}

// Grid (tokens, column blocks): no 64-bit division per value.
__global__ void attention_gate_kernel(const float* attended, const float* qg, int64_t heads,
                                      int head_dim, bf16* out) {
  const int64_t width = heads * head_dim;
  const int column = int(blockIdx.y * blockDim.x + threadIdx.x);
  if (column >= width) return;
  const int64_t t = blockIdx.x, h = column / head_dim, d = column % head_dim;
  const float gate = qg[t * 2 * width + h * 2 * head_dim + head_dim + d];
  out[t * width + column] = to_bf16(attended[t * width + column] * sigmoid_f(gate));
}

// Block r copies run r's last row, 16 bytes a thread a step.
__global__ void copy_last_rows_kernel(const unsigned char* in, int64_t ld_bytes, row_runs runs,
                                      int64_t chunks, uint4* out) {
  const int r = int(blockIdx.x);
  const uint4* row = reinterpret_cast<const uint4*>(in + (run_bound(runs, r + 1) - 1) * ld_bytes);
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) out[r * chunks + c] = row[c];
}

}  // namespace

void copy_last_rows(const void* in, int64_t ld_bytes, const row_runs& runs, int64_t row_bytes,
                    void* out, cudaStream_t stream) {
  if (runs.count == 0 || row_bytes == 0) return;
  if (row_bytes % 16 || ld_bytes % 16 || reinterpret_cast<uintptr_t>(in) % 16 ||
      reinterpret_cast<uintptr_t>(out) % 16)
    throw std::invalid_argument("copy_last_rows: rows must be 16-byte aligned");
  copy_last_rows_kernel<<<unsigned(runs.count), threads, 0, stream>>>(
      static_cast<const unsigned char*>(in), ld_bytes, runs, row_bytes / 16,
      static_cast<uint4*>(out));
  check_launch("copy_last_rows");
}

void f32_to_bf16(const float* in, bf16* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  // bf16 outputs need 8-byte alignment for four values: out + i with i % 4 == 0 from a 16-byte
  // aligned base keeps that.
  launch_map(n, aligned_for_four({in, out}), to_bf16_op{in, out}, stream);
  check_launch("f32_to_bf16");
}

void add_bias(float* y, int64_t rows, int64_t cols, int64_t ldy, const float* bias,
              cudaStream_t stream) {
  if (rows * cols == 0) return;
  add_bias_kernel<<<dim3(unsigned(rows), blocks_for(cols, threads)), threads, 0, stream>>>(
      y, cols, ldy, bias);
  check_launch("add_bias");
}

void gelu_rows_to_bf16(const float* in, int64_t rows, int64_t cols, bf16* out, int64_t ldo,
                       gelu_kind kind, cudaStream_t stream) {
  if (rows * cols == 0) return;
  const bool vectorized = cols % 4 == 0 && ldo % 4 == 0 && aligned_for_four({in, out});
  const dim3 grid(blocks_for(vectorized ? cols / 4 : cols, threads), grid_rows(rows));
  if (kind == gelu_kind::erf)
    gelu_rows_kernel<true><<<grid, threads, 0, stream>>>(in, rows, cols, out, ldo, vectorized);
  else
    gelu_rows_kernel<false><<<grid, threads, 0, stream>>>(in, rows, cols, out, ldo, vectorized);
  check_launch("gelu_rows_to_bf16");
}

template <class T>
void launch_silu_mul(const T* gate, const T* up, int64_t ld, bf16* out, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
  if (rows * cols == 0) return;
  // Four values a thread need 16-byte (fp32) or 8-byte (bf16) aligned rows: ld % 4 == 0 keeps
  // every row at a multiple of four values from an aligned base.
  const bool vectorized = cols % 4 == 0 && ld % 4 == 0 && aligned_for_four({gate, up, out});
  const int64_t items = vectorized ? cols / 4 : cols;
  silu_mul_rows_kernel<T><<<dim3(blocks_for(items, threads), grid_rows(rows)), threads, 0,
                            stream>>>(gate, up, ld, out, rows, cols, vectorized);
  check_launch("silu_mul_to_bf16");
}

void silu_mul_to_bf16(const float* gate, const float* up, int64_t ld, bf16* out, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  launch_silu_mul(gate, up, ld, out, rows, cols, stream);
}

void silu_mul_to_bf16(const bf16* gate, const bf16* up, int64_t ld, bf16* out, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  launch_silu_mul(gate, up, ld, out, rows, cols, stream);
}

void attention_gate_to_bf16(const float* attended, const float* qg, int64_t tokens, int64_t heads,
                            int64_t head_dim, bf16* out, cudaStream_t stream) {
  if (tokens * heads * head_dim == 0) return;
  attention_gate_kernel<<<dim3(unsigned(tokens), blocks_for(heads * head_dim, threads)), threads, 0,
                          stream>>>(attended, qg, heads, int(head_dim), out);
  check_launch("attention_gate_to_bf16");
}

}  // namespace cua_s1::kernels
