// Elementwise kernels: fp32 math, bf16 rounding only where a GEMM reads; four values per thread
// where the operands allow float4 loads.
#include <initializer_list>

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

__device__ __forceinline__ float4 load4(const bf16* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const __nv_bfloat162 lo = *reinterpret_cast<const __nv_bfloat162*>(&raw.x),
                       hi = *reinterpret_cast<const __nv_bfloat162*>(&raw.y);
  return make_float4(__low2float(lo), __high2float(lo), __low2float(hi), __high2float(hi));
}
__device__ __forceinline__ float load1(const float* p) { return *p; }
__device__ __forceinline__ float load1(const bf16* p) { return to_float(*p); }

// out = bf16(f(in)) on one row; f: tanh-GELU, erf-GELU or the identity. In place when in = out
// (bf16): every value is read before it is written, by the same thread.
enum class unary { gelu_tanh, gelu_erf, identity };
template <unary F, class In>
struct unary_op {
  const In* in;
  bf16* out;
  __device__ static float f(float x) {
    if constexpr (F == unary::gelu_erf) return gelu_erf_f(x);
    else if constexpr (F == unary::gelu_tanh) return gelu_tanh_f(x);
    else return x;
  }
  __device__ void one(int64_t i) const { out[i] = to_bf16(f(load1(in + i))); }
  __device__ void four(int64_t i) const {
    const float4 v = load4(in + i);
    store4(out, i, f(v.x), f(v.y), f(v.z), f(v.w));
  }
};
template <unary F, class In>
struct unary_rows {
  const In* in;
  int64_t ldi;
  bf16* out;
  int64_t ldo;
  __device__ unary_op<F, In> at(int64_t row) const { return {in + row * ldi, out + row * ldo}; }
};

// bf16(SiLU(gate) * up) per value, in fp32.
template <class In>
struct silu_mul_op {
  const In* gate;
  const In* up;
  bf16* out;
  __device__ static float f(float g, float u) { return silu_f(g) * u; }
  __device__ void one(int64_t i) const { out[i] = to_bf16(f(load1(gate + i), load1(up + i))); }
  __device__ void four(int64_t i) const {
    const float4 g = load4(gate + i), u = load4(up + i);
    store4(out, i, f(g.x, u.x), f(g.y, u.y), f(g.z, u.z), f(g.w, u.w));
  }
};
template <class In>
struct silu_mul_rows {
  const In* gate;
  const In* up;
  int64_t ld;
  bf16* out;
  int64_t ldo;
  __device__ silu_mul_op<In> at(int64_t row) const {
    return {gate + row * ld, up + row * ld, out + row * ldo};
  }
};

// A row-wise op over [rows, cols]: blockIdx.y is the row, four values per thread when vectorized.
template <class Rows>
__global__ void rows_kernel(Rows rows, int64_t cols, bool vectorized) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto op = rows.at(blockIdx.y);
  if (!vectorized) {
    if (i < cols) op.one(i);
  } else if (4 * i < cols) {
    op.four(4 * i);
  }
}

bool aligned_for_four(std::initializer_list<const void*> operands) {
  for (const void* p : operands)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

// Vectorized loads need 16 bytes (fp32) or 8 (bf16) of alignment: four values from an aligned
// base at a column multiple of four, rows a multiple of four values apart.
template <class T>
bool aligned_rows(const T* p, int64_t ld) {
  return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T)) == 0 && ld % 4 == 0;
}

template <class Rows>
void launch_rows(Rows rows, int64_t count, int64_t cols, bool vectorized, cudaStream_t stream) {
  const dim3 grid(blocks_for(vectorized ? cols / 4 : cols, threads), unsigned(count));
  rows_kernel<<<grid, threads, 0, stream>>>(rows, cols, vectorized);
}

template <class In>
void launch_gelu(const In* in, int64_t ldi, int64_t rows, int64_t cols, bf16* out, int64_t ldo,
                 gelu_kind kind, cudaStream_t stream) {
  const bool vectorized = cols % 4 == 0 && aligned_rows(in, ldi) && aligned_rows(out, ldo);
  if (kind == gelu_kind::erf)
    launch_rows(unary_rows<unary::gelu_erf, In>{in, ldi, out, ldo}, rows, cols, vectorized, stream);
  else
    launch_rows(unary_rows<unary::gelu_tanh, In>{in, ldi, out, ldo}, rows, cols, vectorized, stream);
}

template <class In>
void launch_silu_mul(const In* gate, const In* up, int64_t ld, bf16* out, int64_t rows,
                     int64_t cols, cudaStream_t stream) {
  const bool vectorized = cols % 4 == 0 && aligned_rows(gate, ld) && aligned_rows(up, ld) &&
                          aligned_rows(out, cols);
  launch_rows(silu_mul_rows<In>{gate, up, ld, out, cols}, rows, cols, vectorized, stream);
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

}  // namespace

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

void f32_rows_to_bf16(const float* in, int64_t rows, int64_t cols, bf16* out, int64_t ldo,
                      cudaStream_t stream) {
  if (rows * cols == 0) return;
  const bool vectorized = cols % 4 == 0 && aligned_rows(in, cols) && aligned_rows(out, ldo);
  launch_rows(unary_rows<unary::identity, float>{in, cols, out, ldo}, rows, cols, vectorized,
              stream);
  check_launch("f32_rows_to_bf16");
}

void gelu_rows_in_place(bf16* x, int64_t rows, int64_t cols, int64_t ld, gelu_kind kind,
                        cudaStream_t stream) {
  if (rows * cols == 0) return;
  launch_gelu<bf16>(x, ld, rows, cols, x, ld, kind, stream);
  check_launch("gelu_rows_in_place");
}

void silu_mul_to_bf16(const bf16* gate, const bf16* up, int64_t ld, bf16* out, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  launch_silu_mul(gate, up, ld, out, rows, cols, stream);
  check_launch("silu_mul_to_bf16");
}

void attention_gate_to_bf16(const float* attended, const float* qg, int64_t tokens, int64_t heads,
                            int64_t head_dim, bf16* out, cudaStream_t stream) {
  if (tokens * heads * head_dim == 0) return;
  attention_gate_kernel<<<dim3(unsigned(tokens), blocks_for(heads * head_dim, threads)), threads, 0,
                          stream>>>(attended, qg, heads, int(head_dim), out);
  check_launch("attention_gate_to_bf16");
}

}  // namespace cua_s1::kernels
