// load_model_weights: lock verification, config, shard mapping, tensor checks and LoRA attachment.
#include "model/weight_loader.hpp"
#include "model/json_file.hpp"

#include <boost/json.hpp>
#include <map>
#include <set>

#include "model/lora_adapter.hpp"
#include "model/safetensors_file.hpp"
#include "model/weight_lock.hpp"

namespace cua_s1 {
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

using dtype = tensor_view::dtype;
constexpr const char* index_name = "model.safetensors.index.json";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

const char* dtype_name(dtype type) { return type == dtype::f32 ? "F32" : "BF16"; }

// The weight_map of model.safetensors.index.json: tensor -> shard file name (mtp.* dropped).
outcome<std::map<std::string, std::string>> read_index(const fs::path& path) {
  const std::string file = path.string();
  auto root = read_json_object_file(path, "weight index");
  if (!root) return root.error();
  const json::value* map = root->if_contains("weight_map");
  if (!map || !map->is_object()) return failure{500, file + ": weight_map must be an object"};
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : map->get_object()) {
    const std::string name(key);
    if (!value.is_string())
      return failure{500, file + ": weight_map[\"" + name + "\"] must be a file name"};
    const std::string shard(value.get_string());
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      return failure{500, file + ": weight_map[\"" + name + "\"] names \"" + shard +
                              "\", not a file of the model directory"};
    if (name.starts_with("mtp.")) continue;  // the multi-token-prediction head is not used
    out.emplace(name, shard);
  }
  return out;
}

// Looks tensors up by name across the mapped shards and records which ones were used.
class tensor_binder {
 public:
  tensor_binder(std::map<std::string, std::string> weight_map,
                std::map<std::string, safetensors_file> shards, fs::path base_dir)
      : weight_map_(std::move(weight_map)),
        shards_(std::move(shards)),
        base_(std::move(base_dir)) {}

  const std::string& error() const { return error_; }

  void tensor(const std::string& name, const std::vector<int64_t>& shape, tensor_view& out,
              std::initializer_list<dtype> allowed = {dtype::bf16}) {
    if (!error_.empty()) return;
    auto mapped = weight_map_.find(name);
    if (mapped == weight_map_.end()) {
      error_ = "tensor " + name + " is missing from " + (base_ / index_name).string();
      return;
    }
    const safetensors_file& shard = shards_.at(mapped->second);
    const safetensors_tensor* found = shard.find(name);
    if (!found) {
      error_ = "tensor " + name + " is missing from " + shard.path().string() + " (named by " +
               index_name + ")";
      return;
    }
    if (std::find(allowed.begin(), allowed.end(), found->type) == allowed.end()) {
      error_ = "tensor " + name + " in " + shard.path().string() + " has dtype " +
               dtype_name(found->type) + ", expected " + dtype_name(*allowed.begin());
      return;
    }
    if (found->shape != shape) {
      error_ = "tensor " + name + " in " + shard.path().string() + " has shape " +
               shape_text(found->shape) + ", expected " + shape_text(shape) + " from config.json";
      return;
    }
    out = shard.view(*found);
    used_.insert(name);
  }

  void linear(const std::string& module, int64_t out_features, int64_t in_features, bool bias,
              linear_weights& out) {
    tensor(module + ".weight", {out_features, in_features}, out.weight);
    if (bias) tensor(module + ".bias", {out_features}, out.bias.emplace());
    linears_[module] = &out;
  }

  void norm(const std::string& module, int64_t size, bool bias, norm_weights& out) {
    tensor(module + ".weight", {size}, out.weight);
    if (bias) tensor(module + ".bias", {size}, out.bias.emplace());
  }

  // Every mapped tensor was used, and every shard holds only what the index assigns to it.
  void check_complete() {
    if (!error_.empty()) return;
    for (const auto& [name, shard] : weight_map_) {
      if (!used_.count(name)) {
        error_ = "unexpected tensor " + name + " in " + (base_ / shard).string();
        return;
      }
    }
    for (const auto& [shard_name, shard] : shards_) {
      for (const auto& [name, tensor] : shard.tensors()) {
        if (name.starts_with("mtp.")) continue;
        auto mapped = weight_map_.find(name);
        if (mapped == weight_map_.end() || mapped->second != shard_name) {
          error_ = "tensor " + name + " in " + shard.path().string() +
                   " is not assigned to it by " + index_name;
          return;
        }
      }
    }
  }

  const std::map<std::string, linear_weights*>& linears() const { return linears_; }
  const std::map<std::string, safetensors_file>& shards() const { return shards_; }

 private:
  std::map<std::string, std::string> weight_map_;
  std::map<std::string, safetensors_file> shards_;
  fs::path base_;
  std::set<std::string> used_;
  std::map<std::string, linear_weights*> linears_;
  std::string error_;
};

void bind_vision(const vision_config& c, tensor_binder& bind, vision_weights& out) {
  const std::string p = "model.visual.";
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  bind.tensor(p + "patch_embed.proj.weight",
              {hidden, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size},
              out.patch_embed.weight);
  out.patch_embed.weight.shape = {hidden, int64_t(c.patch_dim())};  // (c, t, py, px) flattened
  bind.tensor(p + "patch_embed.proj.bias", {hidden}, out.patch_embed.bias.emplace());
  bind.tensor(p + "pos_embed.weight", {c.num_position_embeddings, hidden}, out.pos_embed);
  out.blocks.resize(c.depth);
  for (uint32_t i = 0; i < c.depth; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    vision_block_weights& block = out.blocks[i];
    bind.norm(b + "norm1", hidden, true, block.norm1);
    bind.norm(b + "norm2", hidden, true, block.norm2);
    bind.linear(b + "attn.qkv", 3 * hidden, hidden, true, block.qkv);
    bind.linear(b + "attn.proj", hidden, hidden, true, block.proj);
    bind.linear(b + "mlp.linear_fc1", inter, hidden, true, block.fc1);
    bind.linear(b + "mlp.linear_fc2", hidden, inter, true, block.fc2);
  }
  const int64_t merged = hidden * c.spatial_merge_size * c.spatial_merge_size;
  bind.norm(p + "merger.norm", hidden, true, out.merger_norm);
  bind.linear(p + "merger.linear_fc1", merged, merged, true, out.merger_fc1);
  bind.linear(p + "merger.linear_fc2", c.out_hidden_size, merged, true, out.merger_fc2);
}

void bind_language(const text_config& c, tensor_binder& bind, language_weights& out) {
  const std::string p = "model.language_model.";
  const int64_t hidden = c.hidden_size, inter = c.intermediate_size;
  const int64_t key_dim = int64_t(c.linear_num_key_heads) * c.linear_key_head_dim;
  const int64_t value_dim = int64_t(c.linear_num_value_heads) * c.linear_value_head_dim;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  const int64_t q_dim = int64_t(c.num_attention_heads) * c.head_dim;
  const int64_t kv_dim = int64_t(c.num_key_value_heads) * c.head_dim;
  // The published Qwen3.5 checkpoints store A_log and the gated-norm weight in F32.
  const std::initializer_list<dtype> small = {dtype::bf16, dtype::f32};

  bind.tensor(p + "embed_tokens.weight", {c.vocab_size, hidden}, out.embed_tokens);
  out.layers.resize(c.num_hidden_layers);
  for (uint32_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    decoder_layer_weights& layer = out.layers[i];
    bind.norm(l + "input_layernorm", hidden, false, layer.input_layernorm);
    bind.norm(l + "post_attention_layernorm", hidden, false, layer.post_attention_layernorm);
    if (c.full_attention.at(i)) {
      gated_attention_weights& a = layer.self_attn.emplace();
      bind.linear(l + "self_attn.q_proj", 2 * q_dim, hidden, false, a.q_proj);  // query + gate
      bind.linear(l + "self_attn.k_proj", kv_dim, hidden, false, a.k_proj);
      bind.linear(l + "self_attn.v_proj", kv_dim, hidden, false, a.v_proj);
      bind.linear(l + "self_attn.o_proj", hidden, q_dim, false, a.o_proj);
      bind.tensor(l + "self_attn.q_norm.weight", {c.head_dim}, a.q_norm);
      bind.tensor(l + "self_attn.k_norm.weight", {c.head_dim}, a.k_norm);
    } else {
      gated_deltanet_weights& g = layer.linear_attn.emplace();
      bind.linear(l + "linear_attn.in_proj_qkv", conv_dim, hidden, false, g.in_proj_qkv);
      bind.linear(l + "linear_attn.in_proj_z", value_dim, hidden, false, g.in_proj_z);
      bind.linear(l + "linear_attn.in_proj_b", c.linear_num_value_heads, hidden, false,
                  g.in_proj_b);
      bind.linear(l + "linear_attn.in_proj_a", c.linear_num_value_heads, hidden, false,
                  g.in_proj_a);
      bind.linear(l + "linear_attn.out_proj", hidden, value_dim, false, g.out_proj);
      bind.tensor(l + "linear_attn.conv1d.weight", {conv_dim, 1, c.linear_conv_kernel_dim},
                  g.conv1d);
      bind.tensor(l + "linear_attn.A_log", {c.linear_num_value_heads}, g.a_log, small);
      bind.tensor(l + "linear_attn.dt_bias", {c.linear_num_value_heads}, g.dt_bias, small);
      bind.tensor(l + "linear_attn.norm.weight", {c.linear_value_head_dim}, g.norm, small);
    }
    bind.linear(l + "mlp.gate_proj", inter, hidden, false, layer.gate_proj);
    bind.linear(l + "mlp.up_proj", inter, hidden, false, layer.up_proj);
    bind.linear(l + "mlp.down_proj", hidden, inter, false, layer.down_proj);
  }
  bind.norm(p + "norm", hidden, false, out.final_norm);
}

}  // namespace

outcome<std::shared_ptr<const model_weights>> load_model_weights(const weight_sources& sources) {
  auto lock = weight_lock::read(sources.lock_file);
  if (!lock) return lock.error();
  verify_options verify;
  verify.required_base = {"config.json", index_name, "tokenizer.json", "preprocessor_config.json"};
  if (lock->base().files.count("tokenizer_config.json"))
    verify.required_base.push_back("tokenizer_config.json");
  verify.required_adapter = {"adapter_config.json", "adapter_model.safetensors"};
  verify.progress = sources.progress;
  auto verified = verify_weight_files(*lock, sources.base_dir, sources.adapter_dir, verify);
  if (!verified) return verified.error();

  auto config = read_model_config(sources.base_dir / "config.json");
  if (!config) return config.error();
  if (!config->tie_word_embeddings)
    return failure{500, (sources.base_dir / "config.json").string() +
                            ": tie_word_embeddings is false; only a tied lm_head is supported"};
  auto lora = read_lora_config(sources.adapter_dir / "adapter_config.json");
  if (!lora) return lora.error();

  auto weight_map = read_index(sources.base_dir / index_name);
  if (!weight_map) return weight_map.error();
  std::map<std::string, safetensors_file> shards;
  for (const auto& [name, shard] : *weight_map) {
    if (shards.count(shard)) continue;
    if (!verified->base.count(shard))
      return failure{500, (sources.base_dir / shard).string() + " (named by " + index_name +
                              " for " + name + ") is missing"};
    auto file = safetensors_file::open(sources.base_dir / shard);
    if (!file) return file.error();
    shards.emplace(shard, std::move(*file));
  }

  auto weights = std::make_shared<model_weights>();
  weights->config = *config;
  tensor_binder bind(std::move(*weight_map), std::move(shards), sources.base_dir);
  bind_vision(config->vision, bind, weights->vision);
  bind_language(config->text, bind, weights->language);
  bind.check_complete();
  if (!bind.error().empty()) return failure{500, bind.error()};

  auto adapter = safetensors_file::open(sources.adapter_dir / "adapter_model.safetensors");
  if (!adapter) return adapter.error();
  auto attached = attach_lora(*lora, *adapter, bind.linears());
  if (!attached) return attached.error();

  for (const auto& [name, shard] : bind.shards()) weights->keep_alive(shard.mapping());
  weights->keep_alive(adapter->mapping());
  weights->identity = lock->adapter_identity(sources.adapter_dir);
  weights->description = "Qwen3.5 (" + std::to_string(config->text.num_hidden_layers) +
                         " layers, hidden " + std::to_string(config->text.hidden_size) +
                         ") + LoRA r" + std::to_string(lora->r) + " (" + std::to_string(*attached) +
                         " modules)";
  return std::shared_ptr<const model_weights>(std::move(weights));
}

}  // namespace cua_s1
