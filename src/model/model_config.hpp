// The architecture of a Qwen3.5 vision-language checkpoint, read from its config.json.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

// text_config of spec/model.md section 1.1 (names as in config.json).
struct text_config {
  uint32_t vocab_size = 0;
  uint32_t hidden_size = 0;
  uint32_t intermediate_size = 0;
  uint32_t num_hidden_layers = 0;
  std::vector<bool> full_attention;  // per layer: true = full_attention, false = linear_attention
  uint32_t num_attention_heads = 0;
  uint32_t num_key_value_heads = 0;
  uint32_t head_dim = 0;
  uint32_t linear_num_key_heads = 0;
  uint32_t linear_num_value_heads = 0;
  uint32_t linear_key_head_dim = 0;
  uint32_t linear_value_head_dim = 0;
  uint32_t linear_conv_kernel_dim = 0;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 0;
  double partial_rotary_factor = 0;
  std::array<uint32_t, 3> mrope_section{};  // T, H, W frequency counts

  uint32_t rotary_dim() const;  // head_dim * partial_rotary_factor
};

// vision_config of spec/model.md section 1.2.
struct vision_config {
  uint32_t depth = 0;
  uint32_t hidden_size = 0;
  uint32_t num_heads = 0;
  uint32_t intermediate_size = 0;
  uint32_t in_channels = 0;
  uint32_t patch_size = 0;
  uint32_t temporal_patch_size = 0;
  uint32_t spatial_merge_size = 0;
  uint32_t out_hidden_size = 0;
  uint32_t num_position_embeddings = 0;  // a square table: side = sqrt(this)
  double rope_theta = 10000.0;

  uint32_t head_dim() const { return hidden_size / num_heads; }
  uint32_t patch_dim() const {
    return in_channels * temporal_patch_size * patch_size * patch_size;
  }
  uint32_t position_side() const;
};

struct model_config {
  text_config text;
  vision_config vision;
  int32_t image_token_id = 0;
  int32_t vision_start_token_id = 0;
  int32_t vision_end_token_id = 0;
  bool tie_word_embeddings = true;
};

// Reads and checks DIR/config.json (model_type qwen3_5, the fields above, consistent shapes:
// the supported interleaved M-RoPE, attn_output_gate, a square position table). Errors name the
// file and the field.
outcome<model_config> read_model_config(const std::filesystem::path& config_json);

}  // namespace cua_s1
