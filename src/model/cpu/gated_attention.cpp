// Gated attention: projections, per-head norms, partial rotary, causal GQA, output gate.
#include "model/cpu/gated_attention.hpp"

#include <cmath>
#include <vector>

#include "model/cpu/activations.hpp"
#include "model/cpu/attention.hpp"
#include "model/cpu/norms.hpp"
#include "model/cpu/tensor_math.hpp"

namespace cua_s1::cpu {

void gated_attention_forward(const gated_attention_weights& layer, const text_config& config,
                             gemm_engine& gemm, const rotary_table& rotary, const float* x,
                             int64_t tokens, float* out) {
  const int64_t hidden = config.hidden_size, head_dim = config.head_dim;
  const int64_t heads = config.num_attention_heads, kv_heads = config.num_key_value_heads;
  const int64_t q_width = heads * head_dim, kv_width = kv_heads * head_dim;

  // q_proj rows are [q (head_dim) | gate (head_dim)] per head.
  std::vector<float> q_and_gate(size_t(tokens * 2 * q_width));
  std::vector<float> k(size_t(tokens * kv_width)), v(size_t(tokens * kv_width));
  gemm.linear(layer.q_proj, x, tokens, hidden, q_and_gate.data(), 2 * q_width);
  gemm.linear(layer.k_proj, x, tokens, hidden, k.data(), kv_width);
  gemm.linear(layer.v_proj, x, tokens, hidden, v.data(), kv_width);
  std::vector<float> q(size_t(tokens * q_width)), gate(size_t(tokens * q_width));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const float* source = q_and_gate.data() + t * 2 * q_width + h * 2 * head_dim;
      std::copy(source, source + head_dim, q.data() + t * q_width + h * head_dim);
      std::copy(source + head_dim, source + 2 * head_dim, gate.data() + t * q_width + h * head_dim);
    }
  q_and_gate = {};

  const std::vector<float> q_norm = to_floats(layer.q_norm), k_norm = to_floats(layer.k_norm);
  rms_norm(q.data(), tokens * heads, head_dim, head_dim, q_norm.data(), true, config.rms_norm_eps,
           q.data(), head_dim);
  rms_norm(k.data(), tokens * kv_heads, head_dim, head_dim, k_norm.data(), true,
           config.rms_norm_eps, k.data(), head_dim);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h)
      apply_rotate_half(q.data() + t * q_width + h * head_dim, rotary.half, rotary.cos_row(t),
                        rotary.sin_row(t));
    for (int64_t h = 0; h < kv_heads; ++h)
      apply_rotate_half(k.data() + t * kv_width + h * head_dim, rotary.half, rotary.cos_row(t),
                        rotary.sin_row(t));
  }

  attention_shape shape;
  shape.q_len = shape.kv_len = tokens;
  shape.q_heads = heads;
  shape.kv_heads = kv_heads;
  shape.head_dim = head_dim;
  shape.scale = 1.0f / std::sqrt(float(head_dim));
  shape.causal = true;
  std::vector<float> attended(size_t(tokens * q_width));
  attention_runner attention;
  attention.run(shape, q.data(), q_width, k.data(), kv_width, v.data(), kv_width, attended.data(),
                q_width);
  for (size_t i = 0; i < attended.size(); ++i) attended[i] *= sigmoid(gate[i]);
  gemm.linear(layer.o_proj, attended.data(), tokens, q_width, out, hidden);
}

}  // namespace cua_s1::cpu
