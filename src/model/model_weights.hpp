// Views of every tensor the forward pass reads: bf16 base weights memory-mapped from the
// safetensors shards and the fp32 LoRA pairs of the adapter, never copied.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace cua_s1 {

// One stored tensor: row-major data in the mapped file, its dtype and shape.
struct tensor_view {
  enum class dtype { bf16, f32 };
  const void* data = nullptr;
  dtype type = dtype::bf16;
  std::vector<int64_t> shape;

  const uint16_t* bf16() const { return static_cast<const uint16_t*>(data); }
  const float* f32() const { return static_cast<const float*>(data); }
  int64_t elements() const;
};

// The unmerged LoRA of one Linear: delta = (x A^T) B^T * scale, A [r, in], B [out, r], fp32.
struct lora_pair {
  tensor_view a;
  tensor_view b;
  float scale = 0;
};

// A Linear layer: weight [out, in] bf16, optional bias [out] bf16, optional LoRA.
struct linear_weights {
  tensor_view weight;
  std::optional<tensor_view> bias;
  std::optional<lora_pair> lora;

  int64_t out_features() const { return weight.shape.at(0); }
  int64_t in_features() const { return weight.shape.at(1); }
};

struct norm_weights {  // LayerNorm (weight + bias) or RMSNorm (weight only)
  tensor_view weight;
  std::optional<tensor_view> bias;
};

struct vision_block_weights {
  norm_weights norm1, norm2;
  linear_weights qkv, proj;  // attn.qkv, attn.proj
  linear_weights fc1, fc2;   // mlp.linear_fc1, mlp.linear_fc2 (LoRA)
};

struct vision_weights {
  linear_weights patch_embed;  // conv weight viewed as [hidden, patch_dim] (c, t, py, px order)
  tensor_view pos_embed;       // [num_position_embeddings, hidden]
  std::vector<vision_block_weights> blocks;
  norm_weights merger_norm;
  linear_weights merger_fc1, merger_fc2;  // LoRA
};

struct gated_deltanet_weights {  // linear_attn.*
  linear_weights in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj;
  tensor_view conv1d;  // [conv_dim, 1, kernel]
  tensor_view a_log;   // A_log [value heads]
  tensor_view dt_bias;  // [value heads]
  tensor_view norm;    // gated RMSNorm weight [value head dim]
};

struct gated_attention_weights {  // self_attn.*
  linear_weights q_proj, k_proj, v_proj, o_proj;  // LoRA
  tensor_view q_norm, k_norm;                     // zero-centred RMSNorm over head_dim
};

struct decoder_layer_weights {
  norm_weights input_layernorm, post_attention_layernorm;  // zero-centred RMSNorm
  std::optional<gated_deltanet_weights> linear_attn;      // set on linear_attention layers
  std::optional<gated_attention_weights> self_attn;       // set on full_attention layers
  linear_weights gate_proj, up_proj, down_proj;            // mlp.* (LoRA)
};

struct language_weights {
  tensor_view embed_tokens;  // [vocab, hidden]; also the tied head
  std::vector<decoder_layer_weights> layers;
  norm_weights final_norm;
};

// Owns the file mappings the views point into; movable, not copyable.
class model_weights {
 public:
  model_config config;
  vision_weights vision;
  language_weights language;
  std::string identity;     // the answers' "model": "<adapter repo_id>@<revision>:multimodal"
  std::string description;  // e.g. "Qwen3.5 (4 layers, hidden 64) + LoRA r16 (22 modules)"

  model_weights() = default;
  model_weights(model_weights&&) = default;
  model_weights& operator=(model_weights&&) = default;

  // Keeps a mapping alive as long as these weights (used by the loader).
  void keep_alive(std::shared_ptr<const void> mapping) { mappings_.push_back(std::move(mapping)); }

 private:
  std::vector<std::shared_ptr<const void>> mappings_;
};

}  // namespace cua_s1
