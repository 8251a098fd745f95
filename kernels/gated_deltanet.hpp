// Gated DeltaNet kernels (spec/model.md 4.4): causal conv + SiLU, q/k L2 norms, the beta/decay
// gates and the gated delta rule with an fp32 state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/row_runs.hpp"

namespace cua_s1::kernels {

// c[t, ch] = SiLU(sum_j w[ch, j] * u[t - (kernel - 1) + j, ch]) within each run of `runs`; u's
// rows are ld >= channels apart, c's channels.
// Rows before a run's start come from `history` [kernel - 1, channels] (the inputs of the kernel
// - 1 positions before it, oldest first): run r's at history + r * history_stride (stride 0: the
// same for every run), or 0 where history is null (the start of the prompt).
// With `norm`, the output's first 2 q_width channels (the q heads, then the k heads, head_dim
// each) are then L2-normalised per token and head as l2_normalise_heads does (q also times
// q_scale): inside the conv for width 4 (its blocks hold whole heads), else by that kernel.
struct conv_qk_norm {
  int64_t q_width = 0, head_dim = 0;
  float q_scale = 1.0f;
};
void causal_conv_silu(const float* u, int64_t ld, const row_runs& runs, int64_t channels,
                      const float* w, int64_t kernel, const float* history, float* c,
                      cudaStream_t stream, const conv_qk_norm* norm = nullptr,
                      int64_t history_stride = 0);

// The history each run's next segment needs: run r's last kernel - 1 input rows, reaching back
// into its history (as causal_conv_silu reads it) or zeros when the run is shorter, into
// tail + r * tail_stride. `tail` must not alias `history`.
void conv_history_after(const float* u, int64_t ld, const row_runs& runs, int64_t channels,
                        int64_t kernel, const float* history, int64_t history_stride, float* tail,
                        int64_t tail_stride, cudaStream_t stream);

// In place, per token t and head h: x <- x * rsqrt(sum x^2 + 1e-6) * scale for the `dim` values
// at x[t * ld + h * dim].
void l2_normalise_heads(float* x, int64_t tokens, int64_t ld, int64_t heads, int64_t dim,
                        float scale, cudaStream_t stream);

// beta = sigmoid(b), g = -exp(a_log[h]) * softplus(a + dt_bias[h]) (the log of the decay) for
// [tokens, heads]; b's and a's rows are ld apart, beta's and g's heads.
void deltanet_gates(const float* b, const float* a, int64_t ld, const float* a_log,
                    const float* dt_bias, int64_t tokens, int64_t heads, float* beta,
                    float* log_decay, cudaStream_t stream);

// The gated delta rule in the chunked form of spec/model.md 4.4 step 5 (chunks of 64 tokens from
// each run's first token, zero-padded; everything fp32). Each run of `runs` (count 0: one run of
// `tokens`) is its own sequence. q, k, v of token t sit in `qkv` at
// row t (stride ld) at q_offset / k_offset + key head * key_dim and v_offset + value head *
// value_dim; value head h reads key head h / (value_heads / key_heads). out [tokens, value_heads *
// value_dim]. The state starts from `state_in` (null: zero) and, where `state_out` is set, is
// stored there at the end (both [value_heads * value_dim, key_dim]: the key rows of each value
// column; they may be the same buffer). With state_stride 0 every run starts from `state_in` and
// `state_out` needs a single run; with state_stride > 0 (floats, at least one state) run r starts
// from state_in + r * state_stride and ends in state_out + r * state_stride: the packed pass of
// several requests, each resuming its own prefix. key_dim = value_dim = 128.
inline constexpr int64_t delta_rule_chunk = 64;

struct delta_rule_args {
  const float* qkv = nullptr;
  int64_t ld = 0, q_offset = 0, k_offset = 0, v_offset = 0;
  const float* beta = nullptr;       // [tokens, value_heads]
  const float* log_decay = nullptr;  // g [tokens, value_heads]
  int64_t tokens = 0, key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0;
  float* out = nullptr;
  const float* state_in = nullptr;
  float* state_out = nullptr;
  int64_t state_stride = 0;  // floats from one run's state to the next; 0: one state for all
  float* scratch = nullptr;  // delta_rule_scratch_floats() floats, stream-ordered
  row_runs runs;             // count 0: one run of `tokens`; else runs.rows() == tokens
};
size_t delta_rule_scratch_floats(const row_runs& runs, int64_t value_heads, int64_t key_dim,
                                 int64_t value_dim);
void gated_delta_rule(const delta_rule_args& args, cudaStream_t stream);

}  // namespace cua_s1::kernels
