// GDN kernels around the delta rule (kernels/chunked_delta_rule.cu): causal conv + SiLU with a
// history (and the q/k L2 norms fused in), the L2 norms alone and the gates.
#include <stdexcept>

#include "kernels/common.cuh"
#include "kernels/gated_deltanet.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

// Input row `source` of the segment (u's rows ld apart; negative: from the history before it,
// else 0).
__device__ __forceinline__ float conv_input(const float* u, int64_t ld, const float* history,
                                            int64_t source, int64_t channels, int64_t kernel,
                                            int64_t ch) {
  if (source >= 0) return u[source * ld + ch];
  return history ? history[(kernel - 1 + source) * channels + ch] : 0.0f;
}

// Run `run`'s history: its own at `stride` floats a run, the shared one (stride 0), or none.
__device__ __forceinline__ const float* history_of(const float* history, int64_t stride, int run) {
  return history ? history + run * stride : nullptr;
}

// Any kernel width: grid (tokens, channel blocks), no 64-bit division per value.
__global__ void conv_kernel(const float* u, int64_t ld, row_runs runs, int64_t channels,
                            const float* w, int64_t kernel, const float* history,
                            int64_t history_stride, float* c) {
  const int64_t ch = int64_t(blockIdx.y) * blockDim.x + threadIdx.x, t = blockIdx.x;
  if (ch >= channels) return;
  const int run = run_of(runs, t);
  const int64_t first = run_bound(runs, run);  // the first row of t's run
  const float* run_u = u + first * ld;
  const float* run_history = history_of(history, history_stride, run);
  const int64_t local = t - first;
  float sum = 0;
  for (int64_t j = 0; j < kernel; ++j)
    sum += w[ch * kernel + j] *
           conv_input(run_u, ld, run_history, local - (kernel - 1) + j, channels, kernel, ch);
  c[t * channels + ch] = silu_f(sum);
}

// Kernel width K: a thread walks one channel down a strip of rows with the last K - 1 inputs in
// registers, so every input is read once (same sum order as conv_kernel). With norm.head_dim,
// blocks over the q and k channels (whole heads: head_dim divides the block) L2-normalise each
// row's heads before writing (the l2_kernel's factor; sums over the head's warps).
constexpr int conv_strip = 16;
template <int K>
__global__ void __launch_bounds__(threads)
    conv_strip_kernel(const float* u, int64_t ld, row_runs runs, int64_t rows, int64_t channels,
                      const float* w, const float* history, int64_t history_stride, float* c,
                      conv_qk_norm norm) {
  __shared__ float squares_s[threads / 32][conv_strip];
  const int64_t ch = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  const bool normalise = int64_t(blockIdx.y) * blockDim.x < 2 * norm.q_width;  // block-uniform
  if (ch >= channels) return;  // never in a normalising block (whole heads)
  const int64_t t0 = int64_t(blockIdx.x) * conv_strip;
  float weight[K];
#pragma unroll
  for (int j = 0; j < K; ++j) weight[j] = w[ch * K + j];
  int run = run_of(runs, t0);
  int64_t first = run_bound(runs, run), end = run_bound(runs, run + 1);
  float window[K - 1];  // inputs of rows t - (K - 1) .. t - 1
#pragma unroll
  for (int j = 0; j < K - 1; ++j)
    window[j] = conv_input(u + first * ld, ld, history_of(history, history_stride, run),
                           t0 - first - (K - 1) + j, channels, K, ch);
  float inputs[conv_strip];  // all loads issued before the first use: one memory round trip
#pragma unroll
  for (int i = 0; i < conv_strip; ++i) inputs[i] = t0 + i < rows ? u[(t0 + i) * ld + ch] : 0.0f;
  float out[conv_strip];
#pragma unroll
  for (int i = 0; i < conv_strip; ++i) {
    const int64_t t = t0 + i;
    out[i] = 0.0f;
    if (t >= rows) continue;
    if (t == end) {  // the next run starts from the history again
      first = end;
      end = run_bound(runs, ++run + 1);
      const float* run_history = history_of(history, history_stride, run);
#pragma unroll
      for (int j = 0; j < K - 1; ++j)
        window[j] = run_history ? run_history[int64_t(j) * channels + ch] : 0.0f;
    }
    const float x = inputs[i];
    float sum = 0;
#pragma unroll
    for (int j = 0; j < K - 1; ++j) sum += weight[j] * window[j];
    sum += weight[K - 1] * x;
    out[i] = silu_f(sum);
#pragma unroll
    for (int j = 0; j < K - 2; ++j) window[j] = window[j + 1];
    window[K - 2] = x;
  }
  if (normalise) {
    const int warp = int(threadIdx.x / 32), head_warps = int(norm.head_dim / 32);
#pragma unroll
    for (int i = 0; i < conv_strip; ++i) {
      const float squares = warp_sum(out[i] * out[i]);
      if (threadIdx.x % 32 == 0) squares_s[warp][i] = squares;
    }
    __syncthreads();
    const int head_first_warp = warp / head_warps * head_warps;
    const float scale = ch < norm.q_width ? norm.q_scale : 1.0f;
#pragma unroll
    for (int i = 0; i < conv_strip; ++i) {
      float squares = 0;
      for (int k = 0; k < head_warps; ++k) squares += squares_s[head_first_warp + k][i];
      out[i] *= (1.0f / sqrtf(squares + 1e-6f)) * scale;
    }
  }
#pragma unroll
  for (int i = 0; i < conv_strip; ++i)
    if (t0 + i < rows) c[(t0 + i) * channels + ch] = out[i];
}

// Grid (values of a tail, runs).
__global__ void conv_history_kernel(const float* u, int64_t ld, row_runs runs, int64_t channels,
                                    int64_t kernel, const float* history, int64_t history_stride,
                                    float* tail, int64_t tail_stride) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int run = int(blockIdx.y);
  if (i >= (kernel - 1) * channels) return;
  const int64_t r = i / channels, ch = i % channels;
  const int64_t first = run_bound(runs, run), tokens = run_bound(runs, run + 1) - first;
  tail[run * tail_stride + i] = conv_input(u + first * ld, ld,
                                           history_of(history, history_stride, run),
                                           tokens - (kernel - 1) + r, channels, kernel, ch);
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

__global__ void gates_kernel(const float* b, const float* a, int64_t ld, const float* a_log,
                             const float* dt_bias, int64_t tokens, int64_t heads, float* beta,
                             float* log_decay) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= tokens * heads) return;
  const int64_t t = i / heads, h = i % heads;
  beta[i] = sigmoid_f(b[t * ld + h]);
  log_decay[i] = -expf(a_log[h]) * softplus_f(a[t * ld + h] + dt_bias[h]);
}

}  // namespace

void causal_conv_silu(const float* u, int64_t ld, const row_runs& runs, int64_t channels,
                      const float* w, int64_t kernel, const float* history, float* c,
                      cudaStream_t stream, const conv_qk_norm* norm, int64_t history_stride) {
  if (ld < channels) throw std::invalid_argument("causal_conv_silu: rows narrower than channels");
  if (runs.count <= 0 || runs.count > max_runs)
    throw std::invalid_argument("causal_conv_silu: 1 to 8 runs");
  if (runs.rows() * channels == 0) return;
  // Normalised inside the conv when its blocks hold whole heads and never reach past the channels.
  const bool fused = norm && kernel == 4 && norm->head_dim % 32 == 0 &&
                     threads % norm->head_dim == 0 && (2 * norm->q_width) % threads == 0 &&
                     2 * norm->q_width <= channels;
  if (norm && !(norm->head_dim > 0 && norm->q_width % norm->head_dim == 0 && 2 * norm->q_width <= channels))
    throw std::invalid_argument("causal_conv_silu: q/k heads do not fit the channels");
  if (kernel == 4)
    conv_strip_kernel<4><<<dim3(blocks_for(runs.rows(), conv_strip), blocks_for(channels, threads)),
                           threads, 0, stream>>>(u, ld, runs, runs.rows(), channels, w, history,
                                                 history_stride, c, fused ? *norm : conv_qk_norm{});
  else
    conv_kernel<<<dim3(unsigned(runs.rows()), blocks_for(channels, threads)), threads, 0,
                  stream>>>(u, ld, runs, channels, w, kernel, history, history_stride, c);
  check_launch("causal_conv_silu");
  if (norm && !fused) {
    const int64_t heads = norm->q_width / norm->head_dim;
    l2_normalise_heads(c, runs.rows(), channels, heads, norm->head_dim, norm->q_scale, stream);
    l2_normalise_heads(c + norm->q_width, runs.rows(), channels, heads, norm->head_dim, 1.0f,
                       stream);
  }
}

void conv_history_after(const float* u, int64_t ld, const row_runs& runs, int64_t channels,
                        int64_t kernel, const float* history, int64_t history_stride, float* tail,
                        int64_t tail_stride, cudaStream_t stream) {
  if (runs.count <= 0 || runs.count > max_runs)
    throw std::invalid_argument("conv_history_after: 1 to 8 runs");
  if (runs.count > 1 && tail_stride < (kernel - 1) * channels)
    throw std::invalid_argument("conv_history_after: the runs' tails overlap");
  if ((kernel - 1) * channels <= 0) return;
  conv_history_kernel<<<dim3(blocks_for((kernel - 1) * channels, threads), unsigned(runs.count)),
                        threads, 0, stream>>>(u, ld, runs, channels, kernel, history,
                                              history_stride, tail, tail_stride);
  check_launch("conv_history_after");
}

void l2_normalise_heads(float* x, int64_t tokens, int64_t ld, int64_t heads, int64_t dim,
                        float scale, cudaStream_t stream) {
  if (tokens * heads == 0) return;
  l2_kernel<<<blocks_for(tokens * heads, threads / 32), threads, 0, stream>>>(x, tokens, ld, heads,
                                                                             dim, scale);
  check_launch("l2_normalise_heads");
}

void deltanet_gates(const float* b, const float* a, int64_t ld, const float* a_log,
                    const float* dt_bias, int64_t tokens, int64_t heads, float* beta,
                    float* log_decay, cudaStream_t stream) {
  if (tokens * heads == 0) return;
  gates_kernel<<<blocks_for(tokens * heads, threads), threads, 0, stream>>>(
      b, a, ld, a_log, dt_bias, tokens, heads, beta, log_decay);
  check_launch("deltanet_gates");
}

}  // namespace cua_s1::kernels
