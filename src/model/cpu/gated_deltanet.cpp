// Gated DeltaNet: projections, causal conv, gates, the delta-rule recurrence and the gated norm.
#include "model/cpu/gated_deltanet.hpp"

#include <cmath>

#include "model/cpu/activations.hpp"
#include "model/cpu/norms.hpp"
#include "model/cpu/parallel.hpp"
#include "model/cpu/tensor_math.hpp"

namespace cua_s1::cpu {
namespace {

// C[t, ch] = SiLU(sum_j w[ch, j] * U[t - (kernel - 1) + j, ch]), U before the prompt = 0.
void causal_conv_silu(const std::vector<float>& u, int64_t tokens, int64_t channels,
                      const std::vector<float>& w, int64_t kernel, std::vector<float>& c) {
  c.assign(u.size(), 0.0f);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t ch = 0; ch < channels; ++ch) {
      float sum = 0;
      for (int64_t j = 0; j < kernel; ++j) {
        const int64_t source = t - (kernel - 1) + j;
        if (source >= 0) sum += w[size_t(ch * kernel + j)] * u[size_t(source * channels + ch)];
      }
      c[size_t(t * channels + ch)] = silu(sum);
    }
}

// x <- x * rsqrt(sum x^2 + 1e-6) * scale (the reference's l2norm, then the query scale).
void l2_normalise(float* x, int64_t dim, float scale) {
  float sum = 0;
  for (int64_t i = 0; i < dim; ++i) sum += x[i] * x[i];
  const float factor = (1.0f / std::sqrt(sum + 1e-6f)) * scale;
  for (int64_t i = 0; i < dim; ++i) x[i] *= factor;
}

}  // namespace

void gated_deltanet_forward(const gated_deltanet_weights& layer, const text_config& config,
                            gemm_engine& gemm, unsigned threads, const float* x, int64_t tokens,
                            float* out) {
  const int64_t hidden = config.hidden_size;
  const int64_t key_heads = config.linear_num_key_heads, value_heads = config.linear_num_value_heads;
  const int64_t key_dim = config.linear_key_head_dim, value_dim = config.linear_value_head_dim;
  const int64_t q_width = key_heads * key_dim, v_width = value_heads * value_dim;
  const int64_t channels = 2 * q_width + v_width;
  const int64_t kernel = config.linear_conv_kernel_dim;

  std::vector<float> u(size_t(tokens * channels)), z(size_t(tokens * v_width));
  std::vector<float> b(size_t(tokens * value_heads)), a(size_t(tokens * value_heads));
  gemm.linear(layer.in_proj_qkv, x, tokens, hidden, u.data(), channels);
  gemm.linear(layer.in_proj_z, x, tokens, hidden, z.data(), v_width);
  gemm.linear(layer.in_proj_b, x, tokens, hidden, b.data(), value_heads);
  gemm.linear(layer.in_proj_a, x, tokens, hidden, a.data(), value_heads);

  std::vector<float> c;
  causal_conv_silu(u, tokens, channels, to_floats(layer.conv1d), kernel, c);
  u = {};

  // L2-normalised q (times 1/sqrt(key_dim)) and k, in place in the conv output.
  const float q_scale = 1.0f / std::sqrt(float(key_dim));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < key_heads; ++h) {
      l2_normalise(c.data() + t * channels + h * key_dim, key_dim, q_scale);
      l2_normalise(c.data() + t * channels + q_width + h * key_dim, key_dim, 1.0f);
    }

  const std::vector<float> a_log = to_floats(layer.a_log), dt_bias = to_floats(layer.dt_bias);
  std::vector<float> decay(size_t(tokens * value_heads)), beta(size_t(tokens * value_heads));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < value_heads; ++h) {
      const size_t i = size_t(t * value_heads + h);
      beta[i] = sigmoid(b[i]);
      const float g = -std::exp(a_log[size_t(h)]) * softplus(a[i] + dt_bias[size_t(h)]);
      decay[i] = std::exp(g);
    }

  // The gated delta rule per value head; value head h reads key head h / (value / key heads).
  std::vector<float> o(size_t(tokens * v_width));
  const int64_t group = value_heads / key_heads;
  parallel_for(size_t(value_heads), threads, [&](size_t begin, size_t end) {
    std::vector<float> state(size_t(key_dim * value_dim)), correction(static_cast<size_t>(value_dim));
    for (size_t head = begin; head < end; ++head) {
      const int64_t h = int64_t(head), kh = h / group;
      std::fill(state.begin(), state.end(), 0.0f);
      for (int64_t t = 0; t < tokens; ++t) {
        const float* q = c.data() + t * channels + kh * key_dim;
        const float* k = c.data() + t * channels + q_width + kh * key_dim;
        const float* v = c.data() + t * channels + 2 * q_width + h * value_dim;
        const size_t gate = size_t(t * value_heads + h);
        // S~ = e^g S; u = beta (v - S~^T k); S = S~ + k u^T; o = S^T q.
        std::fill(correction.begin(), correction.end(), 0.0f);
        for (int64_t i = 0; i < key_dim; ++i) {
          float* row = state.data() + i * value_dim;
          for (int64_t j = 0; j < value_dim; ++j) {
            row[j] *= decay[gate];
            correction[size_t(j)] += row[j] * k[i];
          }
        }
        for (int64_t j = 0; j < value_dim; ++j)
          correction[size_t(j)] = beta[gate] * (v[j] - correction[size_t(j)]);
        float* output = o.data() + t * v_width + h * value_dim;
        std::fill(output, output + value_dim, 0.0f);
        for (int64_t i = 0; i < key_dim; ++i) {
          float* row = state.data() + i * value_dim;
          for (int64_t j = 0; j < value_dim; ++j) {
            row[j] += k[i] * correction[size_t(j)];
            output[j] += row[j] * q[i];
          }
        }
      }
    }
  });

  const std::vector<float> norm = to_floats(layer.norm);
  gated_rms_norm(o.data(), z.data(), tokens * value_heads, value_dim, norm.data(),
                 config.rms_norm_eps, o.data());
  gemm.linear(layer.out_proj, o.data(), tokens, v_width, out, hidden);
}

}  // namespace cua_s1::cpu
