// The model's weights in device memory: bf16 matrices as stored, small tensors (norms, biases,
// gates, conv taps) and the LoRA pairs in fp32 (plus A's exact bf16 split for the unmerged
// branch, and the vision MLP's B folded into extra weight columns). One allocation holds them all.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "model/model_weights.hpp"

namespace cua_s1::gpu {

using bf16 = __nv_bfloat16;

struct device_lora {
  const float* a = nullptr;        // [rank, in]
  const bf16* a_split = nullptr;   // [3 * rank, in]: A = A_hi + A_mid + A_lo (kernels/lora.hpp)
  const float* b = nullptr;        // [out, rank]
  int64_t rank = 0;
  float scale = 0;
};

struct device_linear {
  const bf16* weight = nullptr;  // [out, in + folded]
  int64_t out = 0, in = 0;
  const float* bias = nullptr;  // [out] or null
  // The bias as the model stores it, where that is bf16 and an epilogue writing bf16 reads it
  // (the vision MLP's fc1: tanh-GELU in the product's epilogue); else null.
  const bf16* bias_bf16 = nullptr;
  device_lora lora;             // rank 0 when the layer has none
  // 3 * rank when the LoRA up projection is folded into the product (kernels/lora.hpp
  // lora_fold_weight): the weight's rows, and its input's, have that many extra columns.
  int64_t folded = 0;
  int64_t input_columns() const { return in + folded; }
};

struct device_norm {
  const float* weight = nullptr;
  const float* bias = nullptr;  // LayerNorm only
};

struct device_vision_block {
  device_norm norm1, norm2;
  device_linear qkv, proj, fc1, fc2;
};

struct device_vision {
  device_linear patch_embed;
  const bf16* pos_embed = nullptr;  // [positions, hidden]
  std::vector<device_vision_block> blocks;
  device_norm merger_norm;
  device_linear merger_fc1, merger_fc2;
};

struct device_deltanet {
  device_linear in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj;
  // The four input projections as one product (their weights back to back); empty while they
  // carry an unmerged LoRA branch.
  device_linear in_proj;
  const float* conv1d = nullptr;  // [channels, kernel]
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
  const float* norm = nullptr;
};

struct device_attention {
  device_linear q_proj, k_proj, v_proj, o_proj;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
};

struct device_layer {
  device_norm input_norm, post_attention_norm;
  bool full_attention = false;
  device_deltanet deltanet;
  device_attention attention;
  device_linear gate_proj, up_proj, down_proj;
};

struct device_language {
  const bf16* embed_tokens = nullptr;  // [vocab, hidden], also the tied head
  int64_t vocab = 0;
  std::vector<device_layer> layers;
  device_norm final_norm;
};

// Owns the device allocation; built once at load, read-only afterwards.
class device_weights {
 public:
  // Copies every tensor of `weights` to the current device. With `merge_language_lora` the
  // language LoRA pairs are merged into their bf16 weights (W' = bf16(W + scale B A)) and those
  // layers run without a LoRA branch; the vision LoRA always stays unmerged (the blocks' MLP
  // Linears fold its up projection into their product).
  explicit device_weights(const model_weights& weights, bool merge_language_lora = false);
  ~device_weights();
  device_weights(const device_weights&) = delete;
  device_weights& operator=(const device_weights&) = delete;

  device_vision vision;
  device_language language;
  size_t bytes() const { return bytes_; }

 private:
  void merge_language_adapters();
  void split_lora_a();
  void fold_vision_lora_b();

  void* arena_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cua_s1::gpu
