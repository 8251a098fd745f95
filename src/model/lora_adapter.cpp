// PEFT LoRA: adapter_config.json validation and attaching the adapter's A/B pairs to Linears.
#include "model/lora_adapter.hpp"
#include "model/json_file.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <set>

namespace cua_s1 {
namespace json = boost::json;

namespace {

constexpr std::string_view key_prefix = "base_model.model.";
constexpr std::string_view suffix_a = ".lora_A.weight";
constexpr std::string_view suffix_b = ".lora_B.weight";

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string last_component(const std::string& module) {
  const size_t dot = module.rfind('.');
  return dot == std::string::npos ? module : module.substr(dot + 1);
}

// True for a JSON value that means "not used": absent, null, false, empty list/object/string.
bool unset(const json::value* value) {
  if (!value || value->is_null()) return true;
  if (value->is_bool()) return !value->get_bool();
  if (value->is_array()) return value->get_array().empty();
  if (value->is_object()) return value->get_object().empty();
  if (value->is_string()) return value->get_string().empty();
  return false;
}

}  // namespace

outcome<lora_config> read_lora_config(const std::filesystem::path& adapter_config_json) {
  const std::string file = adapter_config_json.string();
  auto fail = [&](const std::string& problem) -> failure {
    return failure{500, file + ": " + problem};
  };
  auto root = read_json_object_file(adapter_config_json, "adapter config");
  if (!root) return root.error();
  const json::object& top = *root;

  const json::value* peft_type = top.if_contains("peft_type");
  if (!peft_type || !peft_type->is_string()) return fail("peft_type is missing");
  if (peft_type->get_string() != "LORA")
    return fail("peft_type is \"" + std::string(peft_type->get_string()) +
                "\"; only \"LORA\" adapters are supported");

  lora_config config;
  const json::value* r = top.if_contains("r");
  if (!r || !(r->is_int64() || r->is_uint64()) || r->to_number<int64_t>() <= 0 ||
      r->to_number<int64_t>() > 65536)
    return fail("r must be a positive integer");
  config.r = static_cast<uint32_t>(r->to_number<int64_t>());
  const json::value* alpha = top.if_contains("lora_alpha");
  if (!alpha || !alpha->is_number()) return fail("lora_alpha must be a number");
  config.lora_alpha = alpha->to_number<double>();
  if (!std::isfinite(config.lora_alpha) || config.lora_alpha <= 0)
    return fail("lora_alpha must be a positive number");
  config.scale = static_cast<float>(config.lora_alpha / config.r);

  const json::value* bias = top.if_contains("bias");
  if (bias && !bias->is_null() && !(bias->is_string() && bias->get_string() == "none"))
    return fail("bias must be \"none\" (LoRA biases are not supported)");
  for (const char* flag : {"use_dora", "use_rslora", "lora_bias", "fan_in_fan_out"}) {
    const json::value* value = top.if_contains(flag);
    if (value && !value->is_null() && !value->is_bool())
      return fail(std::string(flag) + " must be true or false");
    if (!unset(value))
      return fail(std::string(flag) + " is true; only plain LoRA (" + flag +
                  " false) is supported");
  }
  for (const char* pattern : {"rank_pattern", "alpha_pattern", "modules_to_save"}) {
    if (!unset(top.if_contains(pattern)))
      return fail(std::string(pattern) + " is set; per-module ranks, alphas and saved modules " +
                  "are not supported");
  }

  const json::value* targets = top.if_contains("target_modules");
  if (!targets || !targets->is_array() || targets->get_array().empty())
    return fail("target_modules must be a non-empty list of module names");
  for (const json::value& target : targets->get_array()) {
    if (!target.is_string()) return fail("target_modules must contain strings");
    const std::string name(target.get_string());
    if (std::find(supported_lora_targets.begin(), supported_lora_targets.end(), name) ==
        supported_lora_targets.end())
      return fail("target_modules contains \"" + name + "\", which is not a supported Linear");
    if (std::find(config.target_modules.begin(), config.target_modules.end(), name) ==
        config.target_modules.end())
      config.target_modules.push_back(name);
  }
  return config;
}

outcome<size_t> attach_lora(const lora_config& config, const safetensors_file& adapter,
                            const std::map<std::string, linear_weights*>& linears) {
  const std::string file = adapter.path().string();
  auto fail = [&](const std::string& problem) -> failure {
    return failure{500, "adapter " + file + ": " + problem};
  };
  auto targeted = [&](const std::string& module) {
    const std::string last = last_component(module);
    return std::find(config.target_modules.begin(), config.target_modules.end(), last) !=
           config.target_modules.end();
  };

  struct halves {
    const safetensors_tensor* a = nullptr;
    const safetensors_tensor* b = nullptr;
  };
  std::map<std::string, halves> pairs;
  for (const auto& [key, tensor] : adapter.tensors()) {
    const std::string where = "tensor \"" + key + "\"";
    const bool is_a = key.ends_with(suffix_a), is_b = key.ends_with(suffix_b);
    if (!key.starts_with(key_prefix) || (!is_a && !is_b))
      return fail(where + " is not a LoRA key (base_model.model.<module>.lora_{A,B}.weight)");
    const std::string module =
        key.substr(key_prefix.size(), key.size() - key_prefix.size() - suffix_a.size());
    if (!module.starts_with("model.visual.") && !module.starts_with("model.language_model."))
      return fail(where + " is outside model.visual and model.language_model");
    auto linear = linears.find(module);
    if (linear == linears.end()) return fail(where + " does not name a Linear of the base model");
    if (!targeted(module))
      return fail(where + " adapts " + module + ", which is not in target_modules");
    if (tensor.type != tensor_view::dtype::f32) return fail(where + " must be F32");
    const linear_weights& base = *linear->second;
    const std::vector<int64_t> expected = is_a
                                              ? std::vector<int64_t>{config.r, base.in_features()}
                                              : std::vector<int64_t>{base.out_features(), config.r};
    if (tensor.shape != expected)
      return fail(where + " has shape " + shape_text(tensor.shape) + ", expected " +
                  shape_text(expected) + " (r " + std::to_string(config.r) + ", Linear " +
                  shape_text(base.weight.shape) + ")");
    (is_a ? pairs[module].a : pairs[module].b) = &tensor;
  }

  size_t attached = 0;
  for (const auto& [module, pair] : pairs) {
    if (!pair.a || !pair.b)
      return fail(module + " has lora_" + std::string(pair.a ? "A" : "B") + " but no lora_" +
                  (pair.a ? "B" : "A"));
    lora_pair lora;
    lora.a = adapter.view(*pair.a);
    lora.b = adapter.view(*pair.b);
    lora.scale = config.scale;
    linears.at(module)->lora = std::move(lora);
    ++attached;
  }
  for (const auto& [module, linear] : linears)
    if (targeted(module) && !pairs.count(module))
      return fail("no LoRA pair for " + module + ", which target_modules covers");
  return attached;
}

}  // namespace cua_s1
