// A PEFT LoRA adapter: adapter_config.json checks and attaching its fp32 A/B pairs to the base
// model's Linear layers.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/outcome.hpp"
#include "model/model_weights.hpp"
#include "model/safetensors_file.hpp"

namespace cua_s1 {

// The Linear module names a LoRA may target.
inline const std::vector<std::string> supported_lora_targets = {
    "q_proj",  "k_proj",    "v_proj",     "o_proj",    "gate_proj",
    "up_proj", "down_proj", "linear_fc1", "linear_fc2"};

struct lora_config {
  uint32_t r = 0;
  double lora_alpha = 0;
  float scale = 0;  // lora_alpha / r
  std::vector<std::string> target_modules;
};

// Reads and checks adapter_config.json: peft_type LORA, r > 0, lora_alpha, bias "none", no DoRA,
// no rsLoRA, no per-module rank/alpha patterns, target_modules a list within
// supported_lora_targets. Errors (status 500) name the file and the field.
outcome<lora_config> read_lora_config(const std::filesystem::path& adapter_config_json);

// Attaches every pair of `adapter` to `linears` (base module name, e.g.
// "model.visual.blocks.0.mlp.linear_fc1", -> its Linear). Keys are
// base_model.model.<module>.lora_{A,B}.weight, F32, A [r, in] and B [out, r]; every key must map
// to a Linear whose last name component is a target module, every A needs its B, and every Linear
// matching a target module must get a pair. Returns the number of pairs attached.
outcome<size_t> attach_lora(const lora_config& config, const safetensors_file& adapter,
                            const std::map<std::string, linear_weights*>& linears);

}  // namespace cua_s1
