// Reads and checks a Qwen3.5 config.json (text_config + vision_config) into model_config.
#include "model/model_config.hpp"
#include "model/json_file.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

namespace cua_s1 {
namespace json = boost::json;

uint32_t text_config::rotary_dim() const {
  return static_cast<uint32_t>(std::lround(head_dim * partial_rotary_factor));
}

uint32_t vision_config::position_side() const {
  auto side = static_cast<uint32_t>(std::lround(std::sqrt(double(num_position_embeddings))));
  while (uint64_t(side) * side > num_position_embeddings) --side;
  while (uint64_t(side + 1) * (side + 1) <= num_position_embeddings) ++side;
  return side;
}

namespace {

// Reads fields of one JSON object; the first problem is kept and names the file and the field.
class field_reader {
 public:
  field_reader(std::string file, std::string* error) : file_(std::move(file)), error_(error) {}

  bool fail(const std::string& field, const std::string& problem) {
    if (error_->empty()) *error_ = file_ + ": " + field + " " + problem;
    return false;
  }

  static const json::value* find(const json::object& object, std::string_view key) {
    const json::value* value = object.if_contains(key);
    return value && !value->is_null() ? value : nullptr;
  }

  const json::object* object(const json::object& parent, const std::string& prefix,
                             std::string_view key, bool required) {
    const json::value* value = find(parent, key);
    if (!value) {
      if (required) fail(prefix + std::string(key), "is missing");
      return nullptr;
    }
    if (!value->is_object()) {
      fail(prefix + std::string(key), "must be an object");
      return nullptr;
    }
    return &value->get_object();
  }

  // A positive integer (or, with allow_zero, non-negative) that fits uint32_t.
  uint32_t count(const json::object& parent, const std::string& prefix, std::string_view key,
                 bool allow_zero = false) {
    const std::string name = prefix + std::string(key);
    const json::value* value = find(parent, key);
    if (!value) return fail(name, "is missing"), 0;
    std::optional<int64_t> number;
    if (value->is_int64()) number = value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= uint64_t(INT64_MAX))
      number = int64_t(value->get_uint64());
    if (!number || *number < (allow_zero ? 0 : 1) || *number > int64_t(UINT32_MAX))
      return fail(name,
                  allow_zero ? "must be a non-negative integer" : "must be a positive integer"),
             0;
    return static_cast<uint32_t>(*number);
  }

  std::optional<double> number(const json::object& parent, const std::string& prefix,
                               std::string_view key) {
    const json::value* value = find(parent, key);
    if (!value) return std::nullopt;
    if (!value->is_number()) {
      fail(prefix + std::string(key), "must be a number");
      return std::nullopt;
    }
    return value->to_number<double>();
  }

  std::optional<bool> boolean(const json::object& parent, const std::string& prefix,
                              std::string_view key) {
    const json::value* value = find(parent, key);
    if (!value) return std::nullopt;
    if (!value->is_bool()) {
      fail(prefix + std::string(key), "must be true or false");
      return std::nullopt;
    }
    return value->get_bool();
  }

  std::optional<std::string> string(const json::object& parent, const std::string& prefix,
                                    std::string_view key) {
    const json::value* value = find(parent, key);
    if (!value) return std::nullopt;
    if (!value->is_string()) {
      fail(prefix + std::string(key), "must be a string");
      return std::nullopt;
    }
    return std::string(value->get_string());
  }

  // A string field that, when present, must equal `expected`.
  void expect_string(const json::object& parent, const std::string& prefix, std::string_view key,
                     std::string_view expected, bool required) {
    const auto value = string(parent, prefix, key);
    if (!value) {
      if (required && error_->empty()) fail(prefix + std::string(key), "is missing");
      return;
    }
    if (*value != expected)
      fail(prefix + std::string(key),
           "is \"" + *value + "\"; only \"" + std::string(expected) + "\" is supported");
  }

 private:
  std::string file_;
  std::string* error_;
};

void read_text(field_reader& in, const json::object& root, const json::object& text,
               text_config& out) {
  const std::string p = "text_config.";
  out.vocab_size = in.count(text, p, "vocab_size");
  out.hidden_size = in.count(text, p, "hidden_size");
  out.intermediate_size = in.count(text, p, "intermediate_size");
  out.num_hidden_layers = in.count(text, p, "num_hidden_layers");
  out.num_attention_heads = in.count(text, p, "num_attention_heads");
  out.num_key_value_heads = in.count(text, p, "num_key_value_heads");
  out.head_dim = in.count(text, p, "head_dim");
  out.linear_num_key_heads = in.count(text, p, "linear_num_key_heads");
  out.linear_num_value_heads = in.count(text, p, "linear_num_value_heads");
  out.linear_key_head_dim = in.count(text, p, "linear_key_head_dim");
  out.linear_value_head_dim = in.count(text, p, "linear_value_head_dim");
  out.linear_conv_kernel_dim = in.count(text, p, "linear_conv_kernel_dim");
  if (auto eps = in.number(text, p, "rms_norm_eps")) {
    if (!(*eps > 0 && *eps < 1)) in.fail(p + "rms_norm_eps", "must be in (0, 1)");
    out.rms_norm_eps = static_cast<float>(*eps);
  }
  in.expect_string(text, p, "model_type", "qwen3_5_text", false);
  in.expect_string(text, p, "hidden_act", "silu", false);
  if (auto gate = in.boolean(text, p, "attn_output_gate"); gate && !*gate)
    in.fail(p + "attn_output_gate", "is false; only gated attention (true) is supported");
  if (auto bias = in.boolean(text, p, "attention_bias"); bias && *bias)
    in.fail(p + "attention_bias", "is true; only attention without biases is supported");

  // layer_types (or the default rule: full attention every full_attention_interval layers).
  out.full_attention.clear();
  if (const json::value* types = in.find(text, "layer_types")) {
    if (!types->is_array()) {
      in.fail(p + "layer_types", "must be an array");
    } else {
      for (const json::value& type : types->get_array()) {
        if (type.is_string() && type.get_string() == "full_attention") {
          out.full_attention.push_back(true);
        } else if (type.is_string() && type.get_string() == "linear_attention") {
          out.full_attention.push_back(false);
        } else {
          in.fail(p + "layer_types", "entries must be \"linear_attention\" or \"full_attention\"");
          break;
        }
      }
      if (out.full_attention.size() != out.num_hidden_layers)
        in.fail(p + "layer_types", "has " + std::to_string(out.full_attention.size()) +
                                       " entries for " + std::to_string(out.num_hidden_layers) +
                                       " layers (num_hidden_layers)");
    }
  } else {
    uint32_t interval = 4;
    if (in.find(text, "full_attention_interval"))
      interval = in.count(text, p, "full_attention_interval");
    for (uint32_t i = 0; i < out.num_hidden_layers; ++i)
      out.full_attention.push_back(interval != 0 && (i + 1) % interval == 0);
  }

  // rope_parameters (older configs keep rope_theta / partial_rotary_factor in text_config).
  const json::object* rope = in.object(text, p, "rope_parameters", false);
  const std::string rp = rope ? p + "rope_parameters." : p;
  const json::object& rope_fields = rope ? *rope : text;
  in.expect_string(rope_fields, rp, "rope_type", "default", false);
  if (auto theta = in.number(rope_fields, rp, "rope_theta")) {
    out.rope_theta = *theta;
  } else {
    in.fail(rp + "rope_theta", "is missing");
  }
  if (!(out.rope_theta > 1)) in.fail(rp + "rope_theta", "must be greater than 1");
  auto factor = in.number(rope_fields, rp, "partial_rotary_factor");
  if (!factor && rope) factor = in.number(text, p, "partial_rotary_factor");
  out.partial_rotary_factor = factor.value_or(1.0);
  if (!(out.partial_rotary_factor > 0 && out.partial_rotary_factor <= 1))
    in.fail(rp + "partial_rotary_factor", "must be in (0, 1]");
  const double rotary = out.head_dim * out.partial_rotary_factor;
  if (std::abs(rotary - std::round(rotary)) > 1e-9 || out.rotary_dim() % 2 != 0)
    in.fail(rp + "partial_rotary_factor", "must give an even number of rotary dims of head_dim");
  if (auto interleaved = in.boolean(rope_fields, rp, "mrope_interleaved"); !interleaved) {
    in.fail(rp + "mrope_interleaved", "is missing; only interleaved M-RoPE (true) is supported");
  } else if (!*interleaved) {
    in.fail(rp + "mrope_interleaved", "is false; only interleaved M-RoPE (true) is supported");
  }
  const json::value* section = in.find(rope_fields, "mrope_section");
  if (!section) {
    in.fail(rp + "mrope_section", "is missing");
  } else if (!section->is_array() || section->get_array().size() != 3) {
    in.fail(rp + "mrope_section", "must be an array of 3 integers");
  } else {
    uint64_t sum = 0;
    for (size_t i = 0; i < 3; ++i) {
      const json::value& v = section->get_array()[i];
      const bool integer = (v.is_int64() && v.get_int64() >= 0 && v.get_int64() <= 1 << 20) ||
                           (v.is_uint64() && v.get_uint64() <= 1 << 20);
      if (!integer) {
        in.fail(rp + "mrope_section", "must be an array of 3 non-negative integers");
        break;
      }
      out.mrope_section[i] = static_cast<uint32_t>(v.to_number<int64_t>());
      sum += out.mrope_section[i];
    }
    if (sum != out.rotary_dim() / 2)
      in.fail(rp + "mrope_section", "sums to " + std::to_string(sum) + ", not rotary_dim / 2 = " +
                                        std::to_string(out.rotary_dim() / 2));
  }

  if (out.num_key_value_heads && out.num_attention_heads % out.num_key_value_heads != 0)
    in.fail(p + "num_attention_heads", "must be a multiple of num_key_value_heads");
  if (out.linear_num_key_heads && out.linear_num_value_heads % out.linear_num_key_heads != 0)
    in.fail(p + "linear_num_value_heads", "must be a multiple of linear_num_key_heads");
  (void)root;
}

void read_vision(field_reader& in, const json::object& vision, const text_config& text,
                 vision_config& out) {
  const std::string p = "vision_config.";
  out.depth = in.count(vision, p, "depth");
  out.hidden_size = in.count(vision, p, "hidden_size");
  out.num_heads = in.count(vision, p, "num_heads");
  out.intermediate_size = in.count(vision, p, "intermediate_size");
  out.in_channels = in.count(vision, p, "in_channels");
  out.patch_size = in.count(vision, p, "patch_size");
  out.temporal_patch_size = in.count(vision, p, "temporal_patch_size");
  out.spatial_merge_size = in.count(vision, p, "spatial_merge_size");
  out.out_hidden_size = in.count(vision, p, "out_hidden_size");
  out.num_position_embeddings = in.count(vision, p, "num_position_embeddings");
  in.expect_string(vision, p, "hidden_act", "gelu_pytorch_tanh", false);
  if (const json::object* rope = in.object(vision, p, "rope_parameters", false)) {
    if (auto theta = in.number(*rope, p + "rope_parameters.", "rope_theta")) {
      out.rope_theta = *theta;
      if (!(*theta > 1)) in.fail(p + "rope_parameters.rope_theta", "must be greater than 1");
    }
  }
  if (out.num_heads && out.hidden_size % out.num_heads != 0)
    in.fail(p + "hidden_size", "must be a multiple of num_heads");
  if (out.num_heads && out.head_dim() % 4 != 0)
    in.fail(p + "hidden_size", "/ num_heads must be a multiple of 4 (2-D rotary)");
  const uint32_t side = out.position_side();
  if (uint64_t(side) * side != out.num_position_embeddings)
    in.fail(p + "num_position_embeddings",
            "is " + std::to_string(out.num_position_embeddings) + ", not a square table");
  if (out.patch_size > 4096 || out.in_channels > 64 || out.temporal_patch_size > 64 ||
      uint64_t(out.in_channels) * out.temporal_patch_size * out.patch_size * out.patch_size >
          UINT32_MAX)
    in.fail(p + "patch_size", "gives an unsupported patch size");
  if (out.spatial_merge_size > 64) in.fail(p + "spatial_merge_size", "is too large");
  if (text.hidden_size && out.out_hidden_size != text.hidden_size)
    in.fail(p + "out_hidden_size", "is " + std::to_string(out.out_hidden_size) +
                                       ", not text_config.hidden_size " +
                                       std::to_string(text.hidden_size));
}

int32_t token_id(field_reader& in, const json::object& root, std::string_view key,
                 uint32_t vocab_size) {
  const uint32_t id = in.count(root, "", key, true);
  if (vocab_size && id >= vocab_size)
    in.fail(std::string(key), "is " + std::to_string(id) + ", outside the vocabulary (" +
                                  std::to_string(vocab_size) + ")");
  return static_cast<int32_t>(std::min<uint32_t>(id, INT32_MAX));
}

}  // namespace

outcome<model_config> read_model_config(const std::filesystem::path& config_json) {
  const std::string file = config_json.string();
  auto root = read_json_object_file(config_json, "model config");
  if (!root) return root.error();
  const json::object& top = *root;

  std::string error;
  field_reader in(file, &error);
  model_config config;
  in.expect_string(top, "", "model_type", "qwen3_5", true);
  const json::object* text = in.object(top, "", "text_config", true);
  const json::object* vision = in.object(top, "", "vision_config", true);
  if (!error.empty()) return failure{500, error};
  read_text(in, top, *text, config.text);
  read_vision(in, *vision, config.text, config.vision);
  config.image_token_id = token_id(in, top, "image_token_id", config.text.vocab_size);
  config.vision_start_token_id = token_id(in, top, "vision_start_token_id", config.text.vocab_size);
  config.vision_end_token_id = token_id(in, top, "vision_end_token_id", config.text.vocab_size);
  // Transformers 5 ties through the text config; fall back to the top level, then to true.
  std::optional<bool> tie = in.boolean(*text, "text_config.", "tie_word_embeddings");
  if (!tie) tie = in.boolean(top, "", "tie_word_embeddings");
  config.tie_word_embeddings = tie.value_or(true);
  if (!error.empty()) return failure{500, error};
  return config;
}

}  // namespace cua_s1
