// GDN kernels. The delta rule gives each value column to a group of 8 lanes that split the key
// rows, so a token costs two 8-lane shuffle reductions and no block barrier.
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/gated_deltanet.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

// Input row `source` of the segment (negative: from the history before it, else 0).
__device__ __forceinline__ float conv_input(const float* u, const float* history, int64_t source,
                                            int64_t channels, int64_t kernel, int64_t ch) {
  if (source >= 0) return u[source * channels + ch];
  return history ? history[(kernel - 1 + source) * channels + ch] : 0.0f;
}

__global__ void conv_kernel(const float* u, int64_t tokens, int64_t channels, const float* w,
                            int64_t kernel, const float* history, float* c) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * channels) return;
  const int64_t t = i / channels, ch = i % channels;
  float sum = 0;
  for (int64_t j = 0; j < kernel; ++j)
    sum += w[ch * kernel + j] * conv_input(u, history, t - (kernel - 1) + j, channels, kernel, ch);
  c[i] = silu_f(sum);
}

__global__ void conv_history_kernel(const float* u, int64_t tokens, int64_t channels,
                                    int64_t kernel, const float* history, float* tail) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= (kernel - 1) * channels) return;
  const int64_t r = i / channels, ch = i % channels;
  tail[i] = conv_input(u, history, tokens - (kernel - 1) + r, channels, kernel, ch);
}

// One warp per (token, head).
__global__ void l2_kernel(float* x, int64_t tokens, int64_t ld, int64_t heads, int64_t dim,
                          float scale) {
  const int64_t item = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (item >= tokens * heads) return;
  float* v = x + (item / heads) * ld + (item % heads) * dim;
  float sum = 0;
  for (int64_t i = lane; i < dim; i += 32) sum += v[i] * v[i];
  const float factor = (1.0f / sqrtf(warp_sum(sum) + 1e-6f)) * scale;
  for (int64_t i = lane; i < dim; i += 32) v[i] *= factor;
}

__global__ void gates_kernel(const float* b, const float* a, const float* a_log,
                             const float* dt_bias, int64_t tokens, int64_t heads, float* beta,
                             float* decay) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * heads) return;
  const int64_t h = i % heads;
  beta[i] = sigmoid_f(b[i]);
  decay[i] = expf(-expf(a_log[h]) * softplus_f(a[i] + dt_bias[h]));
}

constexpr int lanes_per_column = 8;

// ROWS = key_dim / 8 key rows per lane. Grid: one thread per (value column, lane slice).
template <int ROWS>
__global__ void delta_rule_kernel(delta_rule_args a) {
  const int64_t thread = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t column = thread / lanes_per_column;  // h * value_dim + j
  const int slice = int(thread % lanes_per_column);
  const bool active = column < a.value_heads * a.value_dim;
  const int64_t h = active ? column / a.value_dim : 0, j = active ? column % a.value_dim : 0;
  const int64_t kh = h / (a.value_heads / a.key_heads);
  const int64_t row0 = int64_t(slice) * ROWS;
  const float* q_base = a.qkv + a.q_offset + kh * a.key_dim + row0;
  const float* k_base = a.qkv + a.k_offset + kh * a.key_dim + row0;
  const float* v_base = a.qkv + a.v_offset + h * a.value_dim + j;

  float state[ROWS];
  const int64_t state_at = (active ? column : 0) * a.key_dim + row0;
#pragma unroll
  for (int m = 0; m < ROWS; ++m) state[m] = a.state_in && active ? a.state_in[state_at + m] : 0.0f;

  // Registers hold token t while token t + 1 is being loaded (the loop is latency-bound).
  float k[ROWS], q[ROWS], v = 0, d = 0, b = 0;
  auto load = [&](int64_t t, float* kk, float* qq, float& vv, float& dd, float& bb) {
    const int64_t row = t * a.ld;
#pragma unroll
    for (int m = 0; m < ROWS; ++m) {
      kk[m] = k_base[row + m];
      qq[m] = q_base[row + m];
    }
    vv = v_base[row];
    dd = a.decay[t * a.value_heads + h];
    bb = a.beta[t * a.value_heads + h];
  };
  if (a.tokens > 0) load(0, k, q, v, d, b);
  for (int64_t t = 0; t < a.tokens; ++t) {
    float next_k[ROWS], next_q[ROWS], next_v = 0, next_d = 0, next_b = 0;
    if (t + 1 < a.tokens) load(t + 1, next_k, next_q, next_v, next_d, next_b);
    float correction = 0;
#pragma unroll
    for (int m = 0; m < ROWS; ++m) {
      state[m] *= d;
      correction += state[m] * k[m];
    }
    correction += __shfl_xor_sync(0xffffffffu, correction, 1);
    correction += __shfl_xor_sync(0xffffffffu, correction, 2);
    correction += __shfl_xor_sync(0xffffffffu, correction, 4);
    const float u = b * (v - correction);
    float output = 0;
#pragma unroll
    for (int m = 0; m < ROWS; ++m) {
      state[m] += k[m] * u;
      output += state[m] * q[m];
    }
    output += __shfl_xor_sync(0xffffffffu, output, 1);
    output += __shfl_xor_sync(0xffffffffu, output, 2);
    output += __shfl_xor_sync(0xffffffffu, output, 4);
    if (active && slice == 0) a.out[t * a.value_heads * a.value_dim + column] = output;
#pragma unroll
    for (int m = 0; m < ROWS; ++m) {
      k[m] = next_k[m];
      q[m] = next_q[m];
    }
    v = next_v;
    d = next_d;
    b = next_b;
  }
  if (a.state_out && active)
#pragma unroll
    for (int m = 0; m < ROWS; ++m) a.state_out[state_at + m] = state[m];
}

template <int ROWS>
void launch_delta_rule(const delta_rule_args& args, cudaStream_t stream) {
  const int64_t total = args.value_heads * args.value_dim * lanes_per_column;
  delta_rule_kernel<ROWS><<<blocks_for(total, 128), 128, 0, stream>>>(args);
}

}  // namespace

void causal_conv_silu(const float* u, int64_t tokens, int64_t channels, const float* w,
                      int64_t kernel, const float* history, float* c, cudaStream_t stream) {
  if (tokens * channels == 0) return;
  conv_kernel<<<blocks_for(tokens * channels, threads), threads, 0, stream>>>(
      u, tokens, channels, w, kernel, history, c);
  check_launch("causal_conv_silu");
}

void conv_history_after(const float* u, int64_t tokens, int64_t channels, int64_t kernel,
                        const float* history, float* tail, cudaStream_t stream) {
  if ((kernel - 1) * channels <= 0) return;
  conv_history_kernel<<<blocks_for((kernel - 1) * channels, threads), threads, 0, stream>>>(
      u, tokens, channels, kernel, history, tail);
  check_launch("conv_history_after");
}

void l2_normalise_heads(float* x, int64_t tokens, int64_t ld, int64_t heads, int64_t dim,
                        float scale, cudaStream_t stream) {
  if (tokens * heads == 0) return;
  l2_kernel<<<blocks_for(tokens * heads, threads / 32), threads, 0, stream>>>(x, tokens, ld, heads,
                                                                             dim, scale);
  check_launch("l2_normalise_heads");
}

void deltanet_gates(const float* b, const float* a, const float* a_log, const float* dt_bias,
                    int64_t tokens, int64_t heads, float* beta, float* decay, cudaStream_t stream) {
  if (tokens * heads == 0) return;
  gates_kernel<<<blocks_for(tokens * heads, threads), threads, 0, stream>>>(b, a, a_log, dt_bias,
                                                                           tokens, heads, beta,
                                                                           decay);
  check_launch("deltanet_gates");
}

void gated_delta_rule(const delta_rule_args& args, cudaStream_t stream) {
  if (args.tokens == 0) return;
  if (args.key_heads == 0 || args.value_heads % args.key_heads != 0)
    throw std::invalid_argument("gated_delta_rule: value heads must be a multiple of key heads");
  switch (args.key_dim) {
    case 8: launch_delta_rule<1>(args, stream); break;
    case 16: launch_delta_rule<2>(args, stream); break;
    case 32: launch_delta_rule<4>(args, stream); break;
    case 64: launch_delta_rule<8>(args, stream); break;
    case 128: launch_delta_rule<16>(args, stream); break;
    case 256: launch_delta_rule<32>(args, stream); break;
    default: throw std::invalid_argument("gated_delta_rule: key_dim must be 8 * 2^n, at most 256");
  }
  check_launch("gated_delta_rule");
}

}  // namespace cua_s1::kernels
