// Text prefill: embeddings + image scatter, hybrid decoder layers, final norm, letter readout.
#include "model/cpu/language_model.hpp"

#include <stdexcept>

#include "model/cpu/activations.hpp"
#include "model/cpu/gated_attention.hpp"
#include "model/cpu/gated_deltanet.hpp"
#include "model/cpu/norms.hpp"
#include "model/rope.hpp"
#include "model/cpu/tensor_math.hpp"

namespace cua_s1::cpu {
namespace {

// Zero-centred RMSNorm (scale 1 + w) of `rows` rows of the residual stream.
void decoder_norm(const norm_weights& norm, const text_config& config, const float* x,
                  int64_t rows, float* out) {
  const std::vector<float> w = to_floats(norm.weight);
  const int64_t dim = config.hidden_size;
  rms_norm(x, rows, dim, dim, w.data(), true, config.rms_norm_eps, out, dim);
}

}  // namespace

language_model::language_model(const model_weights& weights, unsigned threads)
    : weights_(weights), threads_(threads), gemm_(size_t(64) << 20, threads) {}

std::vector<float> language_model::embed(const prepared_question& question,
                                         const std::vector<float>& image_features) const {
  const int64_t hidden = weights_.config.text.hidden_size;
  const int64_t vocab = weights_.language.embed_tokens.shape.at(0);
  const int64_t tokens = int64_t(question.input_ids.size());
  std::vector<float> h(size_t(tokens * hidden));
  size_t image_row = 0;
  const size_t image_rows = image_features.size() / size_t(hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t id = question.input_ids[size_t(t)];
    if (id < 0 || id >= vocab) throw std::invalid_argument("token id outside the vocabulary");
    float* row = h.data() + t * hidden;
    if (id == weights_.config.image_token_id) {
      if (image_row == image_rows) throw std::invalid_argument("more image pads than features");
      std::copy_n(image_features.data() + image_row * size_t(hidden), hidden, row);
      ++image_row;
    } else {
      copy_rows_f32(weights_.language.embed_tokens, hidden, id, id + 1, row);
    }
  }
  if (image_row != image_rows) throw std::invalid_argument("fewer image pads than features");
  return h;
}

void language_model::run_mlp(const decoder_layer_weights& layer, const float* x, int64_t tokens,
                             float* out) {
  const int64_t hidden = weights_.config.text.hidden_size;
  const int64_t inner = weights_.config.text.intermediate_size;
  std::vector<float> gate(size_t(tokens * inner)), up(size_t(tokens * inner));
  gemm_.linear(layer.gate_proj, x, tokens, hidden, gate.data(), inner);
  gemm_.linear(layer.up_proj, x, tokens, hidden, up.data(), inner);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
  gemm_.linear(layer.down_proj, gate.data(), tokens, inner, out, hidden);
}

std::vector<float> language_model::letter_logits(const prepared_question& question,
                                                 const std::vector<float>& image_features,
                                                 const stage_probe* probe) {
  const text_config& config = weights_.config.text;
  const int64_t hidden = config.hidden_size;
  const int64_t tokens = int64_t(question.input_ids.size());
  if (tokens == 0 || question.positions.axes[0].size() != size_t(tokens))
    throw std::invalid_argument("positions do not match the prompt");

  std::vector<float> h = embed(question, image_features);
  report_stage(probe, "language.embeddings", h.data(), tokens, hidden);
  const rotary_table rotary =
      text_rotary(question.positions, config.rotary_dim(), config.rope_theta, config.mrope_section);

  std::vector<float> normed(h.size()), mixed(h.size());
  for (size_t i = 0; i < weights_.language.layers.size(); ++i) {
    const decoder_layer_weights& layer = weights_.language.layers[i];
    decoder_norm(layer.input_layernorm, config, h.data(), tokens, normed.data());
    if (layer.linear_attn)
      gated_deltanet_forward(*layer.linear_attn, config, gemm_, threads_, normed.data(), tokens,
                             mixed.data());
    else
      gated_attention_forward(*layer.self_attn, config, gemm_, rotary, normed.data(), tokens,
                              mixed.data());
    for (size_t j = 0; j < h.size(); ++j) h[j] += mixed[j];
    decoder_norm(layer.post_attention_layernorm, config, h.data(), tokens, normed.data());
    run_mlp(layer, normed.data(), tokens, mixed.data());
    for (size_t j = 0; j < h.size(); ++j) h[j] += mixed[j];
    report_stage(probe, "language.layers." + std::to_string(i), h.data(), tokens, hidden);
  }

  // Final norm: every row only when a probe wants the stage, else the last position alone.
  const int64_t first = probe && *probe ? 0 : tokens - 1;
  decoder_norm(weights_.language.final_norm, config, h.data() + first * hidden, tokens - first,
               normed.data());
  if (first == 0) report_stage(probe, "language.norm", normed.data(), tokens, hidden);
  const float* last = normed.data() + (tokens - 1 - first) * hidden;

  std::vector<float> logits;
  std::vector<float> row(static_cast<size_t>(hidden));
  for (const int32_t id : question.letter_ids) {
    copy_rows_f32(weights_.language.embed_tokens, hidden, id, id + 1, row.data());
    float sum = 0;
    for (int64_t d = 0; d < hidden; ++d) sum += last[d] * row[size_t(d)];
    logits.push_back(sum);
  }
  return logits;
}

}  // namespace cua_s1::cpu
