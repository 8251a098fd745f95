// fp32 vision forward over the bf16 weights (spec/model.md 3.1-3.5).
#include "model/cpu/vision_encoder.hpp"

#include <cmath>
#include <stdexcept>

#include "model/cpu/activations.hpp"
#include "model/cpu/attention.hpp"
#include "model/cpu/norms.hpp"
#include "model/rope.hpp"
#include "model/cpu/tensor_math.hpp"
#include "model/position_taps.hpp"

namespace cua_s1::cpu {
namespace {

constexpr float layer_norm_eps = 1e-6f;

void layer_norm_of(const norm_weights& norm, const float* x, int64_t rows, int64_t dim,
                   float* out) {
  const std::vector<float> w = to_floats(norm.weight);
  const std::vector<float> b = norm.bias ? to_floats(*norm.bias) : std::vector<float>(size_t(dim));
  layer_norm(x, rows, dim, w.data(), b.data(), layer_norm_eps, out);
}

}  // namespace

vision_encoder::vision_encoder(const model_weights& weights, unsigned threads)
    : weights_(weights), gemm_(size_t(64) << 20, threads) {}

std::vector<float> vision_encoder::position_embeddings(const grid_thw& grid) const {
  const vision_config& config = weights_.config.vision;
  const int64_t hidden = config.hidden_size;
  const position_taps taps =
      vision_position_taps(grid, config.position_side(), config.spatial_merge_size);
  const int64_t patches = int64_t(grid.h) * grid.w;
  std::vector<float> out(size_t(patches * hidden));
  std::vector<float> row(static_cast<size_t>(hidden));
  for (int64_t n = 0; n < patches; ++n) {
    float* target = out.data() + n * hidden;
    for (int tap = 0; tap < 4; ++tap) {
      const int64_t source = taps.rows[size_t(n * 4 + tap)];
      const float weight = taps.weights[size_t(n * 4 + tap)];
      copy_rows_f32(weights_.vision.pos_embed, hidden, source, source + 1, row.data());
      for (int64_t d = 0; d < hidden; ++d)
        target[d] = tap == 0 ? row[size_t(d)] * weight : target[d] + row[size_t(d)] * weight;
    }
  }
  return out;
}

void vision_encoder::run_block(const vision_block_weights& block, const grid_thw& grid,
                               std::vector<float>& x) {
  const vision_config& config = weights_.config.vision;
  const int64_t n = int64_t(grid.h) * grid.w, hidden = config.hidden_size;
  const int64_t heads = config.num_heads, head_dim = config.head_dim();
  const rotary_table rotary =
      vision_rotary(grid.h, grid.w, config.spatial_merge_size, head_dim, config.rope_theta);

  std::vector<float> normed(size_t(n * hidden));
  layer_norm_of(block.norm1, x.data(), n, hidden, normed.data());
  std::vector<float> qkv(size_t(n * 3 * hidden));
  gemm_.linear(block.qkv, normed.data(), n, hidden, qkv.data(), 3 * hidden);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t part = 0; part < 2; ++part)  // q and k
      for (int64_t h = 0; h < heads; ++h)
        apply_rotate_half(qkv.data() + t * 3 * hidden + part * hidden + h * head_dim,
                          rotary.half, rotary.cos_row(t), rotary.sin_row(t));
  attention_shape shape;
  shape.q_len = shape.kv_len = n;
  shape.q_heads = shape.kv_heads = heads;
  shape.head_dim = head_dim;
  shape.scale = 1.0f / std::sqrt(float(head_dim));
  std::vector<float> attended(size_t(n * hidden));
  attention_runner attention;
  attention.run(shape, qkv.data(), 3 * hidden, qkv.data() + hidden, 3 * hidden,
                qkv.data() + 2 * hidden, 3 * hidden, attended.data(), hidden);
  std::vector<float> projected(size_t(n * hidden));
  gemm_.linear(block.proj, attended.data(), n, hidden, projected.data(), hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];

  layer_norm_of(block.norm2, x.data(), n, hidden, normed.data());
  const int64_t inner = config.intermediate_size;
  std::vector<float> up(size_t(n * inner));
  gemm_.linear(block.fc1, normed.data(), n, hidden, up.data(), inner);
  for (float& v : up) v = gelu_tanh(v);
  gemm_.linear(block.fc2, up.data(), n, inner, projected.data(), hidden);
  for (size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
}

std::vector<float> vision_encoder::encode(const prepared_image& image, const stage_probe* probe) {
  const vision_config& config = weights_.config.vision;
  const grid_thw& grid = image.grid;
  const int64_t n = int64_t(grid.h) * grid.w, hidden = config.hidden_size;
  const int64_t merge_area = int64_t(config.spatial_merge_size) * config.spatial_merge_size;
  if (grid.t != 1 || n == 0 || n % merge_area != 0 ||
      image.pixel_values.size() != size_t(n) * config.patch_dim())
    throw std::invalid_argument("vision_encoder: pixel values do not match the grid");

  std::vector<float> x(size_t(n * hidden));
  gemm_.linear(weights_.vision.patch_embed, image.pixel_values.data(), n, config.patch_dim(),
               x.data(), hidden);
  const std::vector<float> positions = position_embeddings(grid);
  for (size_t i = 0; i < x.size(); ++i) x[i] += positions[i];
  report_stage(probe, "vision.embeddings", x.data(), n, hidden);

  for (size_t b = 0; b < weights_.vision.blocks.size(); ++b) {
    run_block(weights_.vision.blocks[b], grid, x);
    report_stage(probe, "vision.blocks." + std::to_string(b), x.data(), n, hidden);
  }

  // Merger: LayerNorm per patch, 2x2 blocks of consecutive rows side by side, fc1, erf-GELU, fc2.
  std::vector<float> normed(size_t(n * hidden));
  layer_norm_of(weights_.vision.merger_norm, x.data(), n, hidden, normed.data());
  const int64_t tokens = n / merge_area, merged = hidden * merge_area;
  const int64_t inner = weights_.vision.merger_fc1.out_features();
  std::vector<float> up(size_t(tokens * inner));
  gemm_.linear(weights_.vision.merger_fc1, normed.data(), tokens, merged, up.data(), inner);
  for (float& v : up) v = gelu_erf(v);
  const int64_t out_hidden = config.out_hidden_size;
  std::vector<float> features(size_t(tokens * out_hidden));
  gemm_.linear(weights_.vision.merger_fc2, up.data(), tokens, inner, features.data(), out_hidden);
  report_stage(probe, "vision.merger", features.data(), tokens, out_hidden);
  return features;
}

}  // namespace cua_s1::cpu
