// The model-file loaders: config.json, the weights lock, the safetensors parser, the LoRA adapter
// and load_model_weights on the tiny fixture, plus malformed copies of it.
#define BOOST_TEST_MODULE model_loader
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "model/lora_adapter.hpp"
#include "model/model_config.hpp"
#include "model/safetensors_file.hpp"
#include "model/weight_loader.hpp"
#include "model/weight_lock.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace cua_s1;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh directory removed at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("cua-s1-loader-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_bytes(const fs::path& path) { return test::read_file(path.string()); }

json::value read_json(const fs::path& path) { return json::parse(read_bytes(path)); }

void write_json(const fs::path& path, const json::value& value) {
  write_file(path, json::serialize(value));
}

// A copy of tests/fixtures/tiny (base/, multimodal/, weights.lock.json).
struct tiny_copy {
  temp_dir dir;
  tiny_copy() {
    for (const char* part : {"base", "multimodal"})
      fs::copy(test::fixture_path(std::string("tiny/") + part), dir.path / part,
               fs::copy_options::recursive);
    fs::copy_file(test::fixture_path("tiny/weights.lock.json"), lock());
    for (const auto& entry : fs::recursive_directory_iterator(dir.path))
      fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add);
  }
  fs::path base() const { return dir.path / "base"; }
  fs::path adapter() const { return dir.path / "multimodal"; }
  fs::path lock() const { return dir.path / "weights.lock.json"; }
  weight_sources sources() const { return {base(), adapter(), lock(), {}}; }

  // Recomputes size and SHA-256 (the repo's sha256_hex) of every listed file that exists.
  void relock() const {
    json::value lock_json = read_json(lock());
    for (auto& artifact : lock_json.at("artifacts").as_array()) {
      const bool is_base = artifact.at("role").as_string() == "base";
      for (auto& [name, entry] : artifact.at("files").as_object()) {
        std::string relative(name);
        if (!is_base) relative = relative.substr(relative.find('/') + 1);
        const fs::path path = (is_base ? base() : adapter()) / relative;
        if (!fs::exists(path)) continue;
        const std::string bytes = read_bytes(path);
        entry.as_object()["size"] = bytes.size();
        entry.as_object()["sha256"] = cua_s1::sha256_hex(bytes.data(), bytes.size());
      }
    }
    write_json(lock(), lock_json);
  }

  // Edits a JSON file of the copy and updates the lock.
  template <class Edit>
  void edit_json(const fs::path& path, Edit edit) const {
    json::value value = read_json(path);
    edit(value.as_object());
    write_json(path, value);
    relock();
  }
};

std::string load_error(const weight_sources& sources) {
  auto loaded = load_model_weights(sources);
  BOOST_REQUIRE(!loaded.ok());
  BOOST_TEST(loaded.error().status == 500);
  BOOST_TEST_MESSAGE("refused: " << loaded.error().detail);
  return loaded.error().detail;
}

// ---- safetensors byte buffers ----

// A file: 8-byte little-endian `length` (default: the header's), the header, `data` zero bytes.
std::vector<std::byte> safetensors_bytes(const std::string& header, size_t data,
                                         std::optional<uint64_t> length = std::nullopt) {
  std::vector<std::byte> out(8 + header.size() + data);
  const uint64_t n = length.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[size_t(i)] = std::byte((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

outcome<safetensors_header> parse(const std::string& header, size_t data,
                                  std::optional<uint64_t> length = std::nullopt) {
  const auto bytes = safetensors_bytes(header, data, length);
  return parse_safetensors_header(bytes, "unit.safetensors");
}

std::string parse_error(const std::string& header, size_t data,
                        std::optional<uint64_t> length = std::nullopt) {
  auto parsed = parse(header, data, length);
  BOOST_REQUIRE_MESSAGE(!parsed.ok(), "accepted: " + header);
  BOOST_TEST(parsed.error().status == 500);
  BOOST_TEST(contains(parsed.error().detail, "unit.safetensors"), parsed.error().detail);
  BOOST_TEST_MESSAGE("refused: " << parsed.error().detail);
  return parsed.error().detail;
}

struct tensor_spec {
  std::string name;
  std::string dtype;  // BF16 or F32
  std::vector<int64_t> shape;
};

// A well-formed safetensors file (contiguous data, header padded to 8 bytes); value i of every
// tensor is float(i) (F32) or i (BF16 bits).
std::string build_safetensors(const std::vector<tensor_spec>& tensors) {
  json::object header;
  std::string data;
  for (const tensor_spec& t : tensors) {
    int64_t count = 1;
    for (int64_t e : t.shape) count *= e;
    const size_t begin = data.size();
    for (int64_t i = 0; i < count; ++i) {
      if (t.dtype == "F32") {
        const float v = float(i);
        data.append(reinterpret_cast<const char*>(&v), 4);
      } else {
        const uint16_t v = uint16_t(i);
        data.append(reinterpret_cast<const char*>(&v), 2);
      }
    }
    json::array shape;
    for (int64_t e : t.shape) shape.push_back(e);
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", shape}, {"data_offsets", json::array{begin, data.size()}}};
  }
  std::string text = json::serialize(header);
  while (text.size() % 8) text.push_back(' ');
  const auto bytes = safetensors_bytes(text, 0);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) + data;
}

// ---- walking the loaded weights ----

std::map<std::string, const tensor_view*> named_views(const model_weights& w) {
  std::map<std::string, const tensor_view*> out;
  auto linear = [&](const std::string& name, const linear_weights& l) {
    out[name + ".weight"] = &l.weight;
    if (l.bias) out[name + ".bias"] = &*l.bias;
  };
  auto norm = [&](const std::string& name, const norm_weights& n) {
    out[name + ".weight"] = &n.weight;
    if (n.bias) out[name + ".bias"] = &*n.bias;
  };
  const std::string v = "model.visual.";
  linear(v + "patch_embed.proj", w.vision.patch_embed);
  out[v + "pos_embed.weight"] = &w.vision.pos_embed;
  for (size_t i = 0; i < w.vision.blocks.size(); ++i) {
    const std::string b = v + "blocks." + std::to_string(i) + ".";
    const auto& block = w.vision.blocks[i];
    norm(b + "norm1", block.norm1);
    norm(b + "norm2", block.norm2);
    linear(b + "attn.qkv", block.qkv);
    linear(b + "attn.proj", block.proj);
    linear(b + "mlp.linear_fc1", block.fc1);
    linear(b + "mlp.linear_fc2", block.fc2);
  }
  norm(v + "merger.norm", w.vision.merger_norm);
  linear(v + "merger.linear_fc1", w.vision.merger_fc1);
  linear(v + "merger.linear_fc2", w.vision.merger_fc2);
  const std::string p = "model.language_model.";
  out[p + "embed_tokens.weight"] = &w.language.embed_tokens;
  for (size_t i = 0; i < w.language.layers.size(); ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    const auto& layer = w.language.layers[i];
    norm(l + "input_layernorm", layer.input_layernorm);
    norm(l + "post_attention_layernorm", layer.post_attention_layernorm);
    if (layer.linear_attn) {
      const auto& g = *layer.linear_attn;
      linear(l + "linear_attn.in_proj_qkv", g.in_proj_qkv);
      linear(l + "linear_attn.in_proj_z", g.in_proj_z);
      linear(l + "linear_attn.in_proj_b", g.in_proj_b);
      linear(l + "linear_attn.in_proj_a", g.in_proj_a);
      linear(l + "linear_attn.out_proj", g.out_proj);
      out[l + "linear_attn.conv1d.weight"] = &g.conv1d;
      out[l + "linear_attn.A_log"] = &g.a_log;
      out[l + "linear_attn.dt_bias"] = &g.dt_bias;
      out[l + "linear_attn.norm.weight"] = &g.norm;
    }
    if (layer.self_attn) {
      const auto& a = *layer.self_attn;
      linear(l + "self_attn.q_proj", a.q_proj);
      linear(l + "self_attn.k_proj", a.k_proj);
      linear(l + "self_attn.v_proj", a.v_proj);
      linear(l + "self_attn.o_proj", a.o_proj);
      out[l + "self_attn.q_norm.weight"] = &a.q_norm;
      out[l + "self_attn.k_norm.weight"] = &a.k_norm;
    }
    linear(l + "mlp.gate_proj", layer.gate_proj);
    linear(l + "mlp.up_proj", layer.up_proj);
    linear(l + "mlp.down_proj", layer.down_proj);
  }
  norm(p + "norm", w.language.final_norm);
  return out;
}

std::map<std::string, const linear_weights*> adapted_linears(const model_weights& w) {
  std::map<std::string, const linear_weights*> out;
  auto add = [&](const std::string& name, const linear_weights& l) {
    if (l.lora) out[name] = &l;
  };
  const std::string v = "model.visual.";
  add(v + "patch_embed.proj", w.vision.patch_embed);
  for (size_t i = 0; i < w.vision.blocks.size(); ++i) {
    const std::string b = v + "blocks." + std::to_string(i) + ".";
    add(b + "attn.qkv", w.vision.blocks[i].qkv);
    add(b + "attn.proj", w.vision.blocks[i].proj);
    add(b + "mlp.linear_fc1", w.vision.blocks[i].fc1);
    add(b + "mlp.linear_fc2", w.vision.blocks[i].fc2);
  }
  add(v + "merger.linear_fc1", w.vision.merger_fc1);
  add(v + "merger.linear_fc2", w.vision.merger_fc2);
  for (size_t i = 0; i < w.language.layers.size(); ++i) {
    const std::string l = "model.language_model.layers." + std::to_string(i) + ".";
    const auto& layer = w.language.layers[i];
    if (layer.self_attn) {
      add(l + "self_attn.q_proj", layer.self_attn->q_proj);
      add(l + "self_attn.k_proj", layer.self_attn->k_proj);
      add(l + "self_attn.v_proj", layer.self_attn->v_proj);
      add(l + "self_attn.o_proj", layer.self_attn->o_proj);
    }
    if (layer.linear_attn) {
      add(l + "linear_attn.in_proj_qkv", layer.linear_attn->in_proj_qkv);
      add(l + "linear_attn.out_proj", layer.linear_attn->out_proj);
    }
    add(l + "mlp.gate_proj", layer.gate_proj);
    add(l + "mlp.up_proj", layer.up_proj);
    add(l + "mlp.down_proj", layer.down_proj);
  }
  return out;
}

// The bytes of `tensor` read straight from a safetensors file (independent of the parser).
std::string raw_tensor_bytes(const fs::path& file, const std::string& tensor) {
  const std::string bytes = read_bytes(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  const json::value header = json::parse(bytes.substr(8, n));
  const auto& offsets = header.at(tensor).at("data_offsets").as_array();
  const auto begin = offsets[0].to_number<size_t>(), end = offsets[1].to_number<size_t>();
  return bytes.substr(8 + n + begin, end - begin);
}

const char* real_config = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"],
  "image_token_id": 248056, "video_token_id": 248057,
  "vision_start_token_id": 248053, "vision_end_token_id": 248054,
  "model_type": "qwen3_5", "tie_word_embeddings": true, "transformers_version": "4.57.0.dev0",
  "text_config": {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 2560,
    "intermediate_size": 9216, "num_hidden_layers": 32,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention",
      "linear_attention", "linear_attention", "linear_attention", "full_attention"],
    "full_attention_interval": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
    "head_dim": 256, "attn_output_gate": true, "attention_bias": false, "attention_dropout": 0.0,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "hidden_act": "silu",
    "rms_norm_eps": 1e-06, "max_position_embeddings": 262144, "mamba_ssm_dtype": "float32",
    "mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": false,
    "dtype": "bfloat16", "tie_word_embeddings": true, "use_cache": true,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000,
      "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10], "mrope_interleaved": true}
  },
  "vision_config": {
    "model_type": "qwen3_5", "depth": 24, "hidden_size": 1024, "num_heads": 16,
    "intermediate_size": 4096, "in_channels": 3, "patch_size": 16, "temporal_patch_size": 2,
    "spatial_merge_size": 2, "out_hidden_size": 2560, "num_position_embeddings": 2304,
    "hidden_act": "gelu_pytorch_tanh", "deepstack_visual_indexes": [], "initializer_range": 0.02
  }
})";

}  // namespace

// ---------------------------------------------------------------- config.json

BOOST_AUTO_TEST_CASE(tiny_config_is_read) {
  auto config = read_model_config(test::fixture_path("tiny/base/config.json"));
  BOOST_REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error().detail));
  const text_config& t = config->text;
  BOOST_TEST(t.vocab_size == 512u);
  BOOST_TEST(t.hidden_size == 64u);
  BOOST_TEST(t.intermediate_size == 128u);
  BOOST_TEST(t.num_hidden_layers == 4u);
  BOOST_TEST((t.full_attention == std::vector<bool>{false, false, false, true}));
  BOOST_TEST(t.num_attention_heads == 4u);
  BOOST_TEST(t.num_key_value_heads == 2u);
  BOOST_TEST(t.head_dim == 256u);
  BOOST_TEST(t.linear_num_key_heads == 2u);
  BOOST_TEST(t.linear_num_value_heads == 4u);
  BOOST_TEST(t.linear_key_head_dim == 128u);
  BOOST_TEST(t.linear_value_head_dim == 128u);
  BOOST_TEST(t.linear_conv_kernel_dim == 4u);
  BOOST_TEST(t.rms_norm_eps == 1e-6f);
  BOOST_TEST(t.rope_theta == 1e7);
  BOOST_TEST(t.partial_rotary_factor == 0.25);
  BOOST_TEST(t.rotary_dim() == 64u);
  BOOST_TEST((t.mrope_section == std::array<uint32_t, 3>{11, 11, 10}));
  const vision_config& v = config->vision;
  BOOST_TEST(v.depth == 2u);
  BOOST_TEST(v.hidden_size == 128u);
  BOOST_TEST(v.num_heads == 2u);
  BOOST_TEST(v.head_dim() == 64u);
  BOOST_TEST(v.intermediate_size == 256u);
  BOOST_TEST(v.patch_dim() == 1536u);
  BOOST_TEST(v.spatial_merge_size == 2u);
  BOOST_TEST(v.out_hidden_size == 64u);
  BOOST_TEST(v.num_position_embeddings == 64u);
  BOOST_TEST(v.position_side() == 8u);
  BOOST_TEST(v.rope_theta == 10000.0);
  BOOST_TEST(config->image_token_id == 500);
  BOOST_TEST(config->vision_start_token_id == 497);
  BOOST_TEST(config->vision_end_token_id == 498);
  BOOST_TEST(config->tie_word_embeddings);
}

BOOST_AUTO_TEST_CASE(real_shaped_config_is_read) {
  temp_dir dir;
  write_file(dir.path / "config.json", real_config);
  auto config = read_model_config(dir.path / "config.json");
  BOOST_REQUIRE_MESSAGE(config.ok(), (config.ok() ? "" : config.error().detail));
  BOOST_TEST(config->text.hidden_size == 2560u);
  BOOST_TEST(config->text.vocab_size == 248320u);
  BOOST_TEST(config->text.rotary_dim() == 64u);
  BOOST_TEST(config->text.full_attention.size() == 32u);
  for (size_t i = 0; i < 32; ++i) BOOST_TEST(config->text.full_attention[i] == ((i + 1) % 4 == 0));
  BOOST_TEST(config->vision.position_side() == 48u);
  BOOST_TEST(config->vision.patch_dim() == 1536u);
  BOOST_TEST(config->vision.rope_theta == 10000.0);  // the default when rope_parameters is absent
  BOOST_TEST(config->image_token_id == 248056);
}

BOOST_AUTO_TEST_CASE(processor_only_fixture_config_is_not_a_model_config) {
  // tests/fixtures/qwen35/config.json holds only the token ids the processor needs.
  auto config = read_model_config(test::fixture_path("qwen35/config.json"));
  BOOST_REQUIRE(!config.ok());
  BOOST_TEST(contains(config.error().detail, "text_config"), config.error().detail);
}

BOOST_AUTO_TEST_CASE(bad_configs_name_file_and_field) {
  const json::value tiny = read_json(test::fixture_path("tiny/base/config.json"));
  struct bad_case {
    std::string field;  // expected in the message
    std::function<void(json::object&)> edit;
  };
  const std::vector<bad_case> cases = {
      {"model_type", [](json::object& c) { c["model_type"] = "qwen3_vl"; }},
      {"text_config.rope_parameters.mrope_interleaved",
       [](json::object& c) {
         c["text_config"].as_object()["rope_parameters"].as_object()["mrope_interleaved"] = false;
       }},
      {"text_config.attn_output_gate",
       [](json::object& c) { c["text_config"].as_object()["attn_output_gate"] = false; }},
      {"text_config.hidden_size",
       [](json::object& c) { c["text_config"].as_object()["hidden_size"] = -1; }},
      {"text_config.layer_types",
       [](json::object& c) { c["text_config"].as_object()["layer_types"].as_array().pop_back(); }},
      {"text_config.num_attention_heads",
       [](json::object& c) { c["text_config"].as_object()["num_key_value_heads"] = 3; }},
      {"text_config.rope_parameters.mrope_section",
       [](json::object& c) {
         c["text_config"].as_object()["rope_parameters"].as_object()["mrope_section"] =
             json::array{11, 11, 11};
       }},
      {"text_config.rope_parameters.rope_theta",
       [](json::object& c) {
         c["text_config"].as_object()["rope_parameters"].as_object().erase("rope_theta");
       }},
      {"vision_config.num_position_embeddings",
       [](json::object& c) { c["vision_config"].as_object()["num_position_embeddings"] = 60; }},
      {"vision_config.hidden_size",
       [](json::object& c) { c["vision_config"].as_object()["num_heads"] = 3; }},
      {"vision_config.out_hidden_size",
       [](json::object& c) { c["vision_config"].as_object()["out_hidden_size"] = 32; }},
      {"image_token_id", [](json::object& c) { c["image_token_id"] = 512; }},
      {"vision_config", [](json::object& c) { c.erase("vision_config"); }},
  };
  for (const bad_case& bad : cases) {
    temp_dir dir;
    json::value config = tiny;
    bad.edit(config.as_object());
    write_json(dir.path / "config.json", config);
    auto read = read_model_config(dir.path / "config.json");
    BOOST_REQUIRE_MESSAGE(!read.ok(), "accepted a config with a bad " + bad.field);
    BOOST_TEST(read.error().status == 500);
    BOOST_TEST(contains(read.error().detail, (dir.path / "config.json").string()),
               read.error().detail);
    BOOST_TEST(contains(read.error().detail, bad.field), read.error().detail);
  }
}

// ---------------------------------------------------------------- safetensors header parser

BOOST_AUTO_TEST_CASE(safetensors_header_accepts_a_valid_file) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},)"
      R"("b":{"dtype":"F32","shape":[],"data_offsets":[12,16]},)"
      R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[16,16]}})";
  const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  auto parsed = parse(padded, 16);
  BOOST_REQUIRE_MESSAGE(parsed.ok(), (parsed.ok() ? "" : parsed.error().detail));
  BOOST_TEST(parsed->data_offset == 8 + padded.size());
  BOOST_TEST(parsed->metadata.at("format") == "pt");
  BOOST_TEST(parsed->tensors.size() == 3u);
  const safetensors_tensor& a = parsed->tensors.at("a");
  BOOST_TEST((a.shape == std::vector<int64_t>{2, 3}));
  BOOST_TEST(a.elements() == 6);
  BOOST_TEST((a.type == tensor_view::dtype::bf16));
  BOOST_TEST(a.end == 12u);
  BOOST_TEST(parsed->tensors.at("b").elements() == 1);
  BOOST_TEST((parsed->tensors.at("b").type == tensor_view::dtype::f32));
  BOOST_TEST(parsed->tensors.at("e").elements() == 0);
}

BOOST_AUTO_TEST_CASE(safetensors_header_refuses_bad_lengths) {
  const std::string ok = R"({"t":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  BOOST_TEST(contains(parse_error(ok, 4, 0), "header length is 0"));
  BOOST_TEST(contains(parse_error(ok, 4, (100ull << 20) + 1), "exceeds 104857600"));
  BOOST_TEST(contains(parse_error(ok, 4, ok.size() + 5), "exceeds the"));
  const std::vector<std::byte> short_file(5);
  auto parsed = parse_safetensors_header(short_file, "unit.safetensors");
  BOOST_REQUIRE(!parsed.ok());
  BOOST_TEST(contains(parsed.error().detail, "too short"));
}

BOOST_AUTO_TEST_CASE(safetensors_header_refuses_bad_json) {
  BOOST_TEST(contains(parse_error(R"({"t":{"dtype":"BF16",)", 0), "not valid JSON"));
  BOOST_TEST(contains(parse_error("[1,2,3]", 0), "not a JSON object"));
  BOOST_TEST(contains(parse_error(R"({"t":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]},)"
                                  R"("t":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}})",
                                  4),
                      "\"t\" more than once"));
  BOOST_TEST(contains(parse_error(R"({"__metadata__":{"format":1}})", 0), "__metadata__"));
  BOOST_TEST(contains(parse_error(R"({"__metadata__":[]})", 0), "__metadata__"));
  BOOST_TEST(contains(parse_error(R"({"t":[]})", 0), "tensor \"t\" is not an object"));
}

BOOST_AUTO_TEST_CASE(safetensors_header_refuses_bad_entries) {
  auto entry = [](const std::string& name, const std::string& body) {
    return "{\"" + name + "\":{" + body + "}}";
  };
  struct bad_case {
    std::string header;
    size_t data;
    std::string expected;
  };
  const std::vector<bad_case> cases = {
      {entry("w.f16", R"("dtype":"F16","shape":[2],"data_offsets":[0,4])"), 4, "dtype F16"},
      {entry("w.i8", R"("dtype":"I8","shape":[2],"data_offsets":[0,2])"), 2, "dtype I8"},
      {entry("w.n", R"("dtype":7,"shape":[2],"data_offsets":[0,4])"), 4, "not a string"},
      {entry("w.count", R"("dtype":"BF16","shape":[2,3],"data_offsets":[0,10])"), 10,
       "spans 10 bytes"},
      {entry("w.f32", R"("dtype":"F32","shape":[3],"data_offsets":[0,6])"), 8, "need 12"},
      {entry("w.beyond", R"("dtype":"BF16","shape":[4],"data_offsets":[0,8])"), 6,
       "beyond the 6-byte"},
      {entry("w.reversed", R"("dtype":"BF16","shape":[0],"data_offsets":[4,2])"), 8,
       "begin after end"},
      {entry("w.neg", R"("dtype":"BF16","shape":[-2],"data_offsets":[0,4])"), 4,
       "non-negative integer"},
      {entry("w.frac", R"("dtype":"BF16","shape":[2.5],"data_offsets":[0,4])"), 4,
       "non-negative integer"},
      {entry("w.big", R"("dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4])"), 4,
       "overflows"},
      {entry("w.zero", R"("dtype":"BF16","shape":[4611686018427387904,2,0],"data_offsets":[0,0])"),
       0, "overflows"},
      {entry("w.offs", R"("dtype":"BF16","shape":[2],"data_offsets":[0])"), 4, "[begin, end]"},
      {entry("w.offneg", R"("dtype":"BF16","shape":[2],"data_offsets":[-4,0])"), 4, "non-negative"},
      {entry("w.extra", R"("dtype":"BF16","shape":[2],"data_offsets":[0,4],"x":1)"), 4,
       "exactly the keys"},
      {entry("w.missing", R"("dtype":"BF16","shape":[2])"), 4, "exactly the keys"},
      {entry("w.align", R"("dtype":"F32","shape":[1],"data_offsets":[2,6])"), 8, "aligned"},
      {R"({"w.x":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
       R"("w.y":{"dtype":"BF16","shape":[2],"data_offsets":[6,10]}})",
       12, "overlap"},
      {R"({"w.same":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
       R"("w.twin":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
       4, "overlap"},
  };
  for (const bad_case& bad : cases) {
    // Pad so that offsets are aligned unless the case is about alignment.
    std::string header = bad.header;
    while ((header.size() + 8) % 8) header.push_back(' ');
    const std::string detail = parse_error(header, bad.data);
    BOOST_TEST(contains(detail, bad.expected), detail);
    const std::string name = header.substr(2, header.find('"', 2) - 2);
    BOOST_TEST(contains(detail, name), detail);
  }
}

BOOST_AUTO_TEST_CASE(safetensors_file_maps_the_fixture) {
  const fs::path shard = test::fixture_path("tiny/multimodal/adapter_model.safetensors");
  auto file = safetensors_file::open(shard);
  BOOST_REQUIRE_MESSAGE(file.ok(), (file.ok() ? "" : file.error().detail));
  BOOST_TEST(file->tensors().size() == 44u);  // 22 pairs
  const std::string key = "base_model.model.model.visual.merger.linear_fc2.lora_B.weight";
  const safetensors_tensor* tensor = file->find(key);
  BOOST_REQUIRE(tensor);
  const tensor_view view = file->view(*tensor);
  const std::string raw = raw_tensor_bytes(shard, key);
  BOOST_TEST(size_t(view.elements()) * 4 == raw.size());
  BOOST_TEST(std::memcmp(view.data, raw.data(), raw.size()) == 0);
  auto missing = safetensors_file::open(shard.parent_path() / "nope.safetensors");
  BOOST_REQUIRE(!missing.ok());
  BOOST_TEST(contains(missing.error().detail, "nope.safetensors"));
}

// ---------------------------------------------------------------- the tiny model

BOOST_AUTO_TEST_CASE(tiny_model_loads) {
  weight_sources sources{test::fixture_path("tiny/base"),
                         test::fixture_path("tiny/multimodal"),
                         test::fixture_path("tiny/weights.lock.json"),
                         {}};
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  sources.progress = [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); };
  auto loaded = load_model_weights(sources);
  BOOST_REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));
  const model_weights& w = **loaded;

  BOOST_TEST(w.identity == "cua-s1/tiny-qwen3.5-lora@fixture:multimodal");
  BOOST_TEST(w.description == "Qwen3.5 (4 layers, hidden 64) + LoRA r16 (22 modules)");
  BOOST_TEST(w.config.text.hidden_size == 64u);
  BOOST_TEST(w.vision.blocks.size() == 2u);
  BOOST_TEST(w.language.layers.size() == 4u);
  for (size_t i = 0; i < 4; ++i) {
    BOOST_TEST(w.language.layers[i].self_attn.has_value() == (i == 3));
    BOOST_TEST(w.language.layers[i].linear_attn.has_value() == (i != 3));
  }

  // Hashing progress: ends with (total, total), total = every locked file's size.
  uint64_t total = 0;
  const json::value lock_json = read_json(sources.lock_file);
  for (const auto& artifact : lock_json.at("artifacts").as_array())
    for (const auto& [name, entry] : artifact.at("files").as_object())
      total += entry.at("size").to_number<uint64_t>();
  BOOST_REQUIRE(!progress.empty());
  BOOST_TEST(progress.back().first == total);
  BOOST_TEST(progress.back().second == total);

  // Every base tensor of the manifest, with its dtype and shape (the patch embed is viewed 2-D).
  const json::value manifest = read_json(test::fixture_path("tiny/manifest.json"));
  const auto& expected = manifest.at("base_tensors").as_object();
  const auto views = named_views(w);
  BOOST_TEST(views.size() == expected.size());
  BOOST_TEST(expected.size() == 88u);
  for (const auto& [key, info] : expected) {
    const std::string name(key);
    auto it = views.find(name);
    BOOST_REQUIRE_MESSAGE(it != views.end(), name + " not loaded");
    std::vector<int64_t> shape;
    for (const auto& e : info.at("shape").as_array()) shape.push_back(e.to_number<int64_t>());
    if (name == "model.visual.patch_embed.proj.weight") shape = {128, 3 * 2 * 16 * 16};
    BOOST_TEST(it->second->shape == shape, name);
    BOOST_TEST(it->second->data != nullptr, name);
    const bool bf16 = info.at("dtype").as_string() == "BF16";
    BOOST_TEST((it->second->type == tensor_view::dtype::bf16) == bf16, name);
  }
  BOOST_TEST(w.vision.patch_embed.in_features() == 1536);

  // The LoRA pairs: exactly the manifest's modules, with A [r, in], B [out, r], scale 2.
  std::set<std::string> expected_lora;
  for (const auto& m : manifest.at("lora_modules").as_array())
    expected_lora.insert(std::string(m.as_string()));
  const auto adapted = adapted_linears(w);
  std::set<std::string> got_lora;
  for (const auto& [name, linear] : adapted) {
    got_lora.insert(name);
    const lora_pair& lora = *linear->lora;
    BOOST_TEST(lora.scale == 2.0f);
    BOOST_TEST((lora.a.type == tensor_view::dtype::f32 && lora.b.type == tensor_view::dtype::f32));
    BOOST_TEST((lora.a.shape == std::vector<int64_t>{16, linear->in_features()}), name);
    BOOST_TEST((lora.b.shape == std::vector<int64_t>{linear->out_features(), 16}), name);
  }
  BOOST_TEST(got_lora.size() == 22u);
  BOOST_TEST((got_lora == expected_lora));

  // Values: the views point at the bytes of the files (read here without the loader).
  const json::value index = read_json(fs::path(sources.base_dir) / "model.safetensors.index.json");
  for (const std::string name :
       {"model.language_model.embed_tokens.weight", "model.visual.patch_embed.proj.weight",
        "model.language_model.layers.0.linear_attn.A_log"}) {
    const std::string shard(index.at("weight_map").at(name).as_string());
    const std::string raw = raw_tensor_bytes(fs::path(sources.base_dir) / shard, name);
    const tensor_view& view = *views.at(name);
    BOOST_REQUIRE(size_t(view.elements()) * 2 == raw.size());
    std::vector<uint16_t> first(std::min<size_t>(16, raw.size() / 2));
    std::memcpy(first.data(), raw.data(), first.size() * 2);
    for (size_t i = 0; i < first.size(); ++i) BOOST_TEST(view.bf16()[i] == first[i], name);
    BOOST_TEST(std::memcmp(view.data, raw.data(), raw.size()) == 0, name);
  }
  const std::string lora_key = "base_model.model.model.language_model.layers.3.self_attn.q_proj";
  const std::string raw_a = raw_tensor_bytes(
      fs::path(sources.adapter_dir) / "adapter_model.safetensors", lora_key + ".lora_A.weight");
  const lora_pair& q_lora = *w.language.layers[3].self_attn->q_proj.lora;
  BOOST_REQUIRE(raw_a.size() == size_t(q_lora.a.elements()) * 4);
  BOOST_TEST(std::memcmp(q_lora.a.f32(), raw_a.data(), raw_a.size()) == 0);
}

BOOST_AUTO_TEST_CASE(weights_outlive_the_loader_call) {
  std::shared_ptr<const model_weights> weights;
  {
    tiny_copy copy;
    auto loaded = load_model_weights(copy.sources());
    BOOST_REQUIRE_MESSAGE(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));
    weights = *loaded;
  }  // the files are deleted; the mappings stay valid
  const tensor_view& norm = weights->language.final_norm.weight;
  uint64_t sum = 0;
  for (int64_t i = 0; i < norm.elements(); ++i) sum += norm.bf16()[i];
  BOOST_TEST(sum > 0u);
}

// ---------------------------------------------------------------- the lock

BOOST_AUTO_TEST_CASE(lock_is_read) {
  auto lock = weight_lock::read(test::fixture_path("tiny/weights.lock.json"));
  BOOST_REQUIRE_MESSAGE(lock.ok(), (lock.ok() ? "" : lock.error().detail));
  BOOST_TEST(lock->base().repo_id == "cua-s1/tiny-qwen3.5");
  BOOST_TEST(lock->adapter().files.count("multimodal/adapter_model.safetensors") == 1u);
  BOOST_TEST(lock->adapter_identity(test::fixture_path("tiny/multimodal/")) ==
             "cua-s1/tiny-qwen3.5-lora@fixture:multimodal");

  // The project's real pinned lock (when the shared specs are present).
  const fs::path real = "/work/shared/data/weights.lock.json";
  if (fs::exists(real)) {
    auto pinned = weight_lock::read(real);
    BOOST_REQUIRE_MESSAGE(pinned.ok(), (pinned.ok() ? "" : pinned.error().detail));
    BOOST_TEST(pinned->adapter_identity("/models/cua-s1-4b-0.2/multimodal") ==
               "cua-ai/cua-s1-4b-0.2@16818868b0cc7813808aae4e87b417657046ab79:multimodal");
    BOOST_TEST(pinned->base().files.at("config.json").size == 3161u);
  }
}

BOOST_AUTO_TEST_CASE(flipped_byte_is_a_hash_mismatch) {
  tiny_copy copy;
  const fs::path shard = copy.base() / "model-00002-of-00002.safetensors";
  std::string bytes = read_bytes(shard);
  bytes[bytes.size() / 2] ^= 0x01;
  write_file(shard, bytes);
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, shard.string()), detail);
  BOOST_TEST(contains(detail, "7a0537f1d0f0902bd4fa31d865034e24aa5067fdbdae24744335c08475e4d61e"),
             detail);
  BOOST_TEST(contains(detail, cua_s1::sha256_hex(bytes.data(), bytes.size())), detail);
}

BOOST_AUTO_TEST_CASE(truncated_shard_is_a_size_mismatch) {
  tiny_copy copy;
  const fs::path shard = copy.base() / "model-00001-of-00002.safetensors";
  fs::resize_file(shard, 1000);
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, shard.string()), detail);
  BOOST_TEST(contains(detail, "1000"), detail);
  BOOST_TEST(contains(detail, "1997656"), detail);
}

BOOST_AUTO_TEST_CASE(unlisted_files_are_refused) {
  for (const std::string where : {"base/notes.txt", "multimodal/extra/adapter.bin"}) {
    tiny_copy copy;
    const fs::path extra = copy.dir.path / where;
    fs::create_directories(extra.parent_path());
    write_file(extra, "x");
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(detail == extra.string() + " is not in the lock file " + copy.lock().string());
  }
}

BOOST_AUTO_TEST_CASE(cache_dir_and_absent_unneeded_files_are_fine) {
  tiny_copy copy;
  fs::create_directories(copy.base() / ".cache" / "huggingface");
  write_file(copy.base() / ".cache" / "huggingface" / "download.lock", "x");
  json::value lock = read_json(copy.lock());
  lock.at("artifacts").as_array()[0].at("files").as_object()["LICENSE"] = {
      {"size", 5}, {"sha256", std::string(64, '0')}};
  lock.at("artifacts").as_array()[1].at("files").as_object()["text/adapter_config.json"] = {
      {"size", 5}, {"sha256", std::string(64, '0')}};
  write_json(copy.lock(), lock);
  auto loaded = load_model_weights(copy.sources());
  BOOST_TEST(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));

  // A .cache anywhere but the top level is an ordinary directory.
  fs::create_directories(copy.adapter() / "sub" / ".cache");
  write_file(copy.adapter() / "sub" / ".cache" / "x", "x");
  BOOST_TEST(contains(load_error(copy.sources()), "is not in the lock file"));
}

BOOST_AUTO_TEST_CASE(missing_needed_file_is_refused) {
  tiny_copy copy;
  fs::remove(copy.base() / "tokenizer.json");
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, (copy.base() / "tokenizer.json").string() + " is missing"), detail);
}

BOOST_AUTO_TEST_CASE(bad_locks_are_refused) {
  struct bad_case {
    std::string expected;
    std::function<void(json::object&)> edit;
  };
  const std::vector<bad_case> cases = {
      {"schema is \"cua-s1/weights-lock/v0\"",
       [](json::object& l) { l["schema"] = "cua-s1/weights-lock/v0"; }},
      {"schema is missing", [](json::object& l) { l.erase("schema"); }},
      {"artifacts must be an array", [](json::object& l) { l["artifacts"] = 1; }},
      {"no artifact has the role \"adapter\"",
       [](json::object& l) { l["artifacts"].as_array().pop_back(); }},
      {"sha256 must be 64 lowercase hex digits",
       [](json::object& l) {
         l["artifacts"].as_array()[0].at("files").at("config.json").as_object()["sha256"] = "ABC";
       }},
      {"size must be a non-negative integer",
       [](json::object& l) {
         l["artifacts"].as_array()[0].at("files").at("config.json").as_object()["size"] = -1;
       }},
      {"role is \"merged\"",
       [](json::object& l) { l["artifacts"].as_array()[1].as_object()["role"] = "merged"; }},
      {"not a plain relative path",
       [](json::object& l) {
         l["artifacts"].as_array()[0].at("files").as_object()["../x"] =
             l["artifacts"].as_array()[0].at("files").at("config.json");
       }},
  };
  for (const bad_case& bad : cases) {
    tiny_copy copy;
    json::value lock = read_json(copy.lock());
    bad.edit(lock.as_object());
    write_json(copy.lock(), lock);
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail, copy.lock().string()), detail);
    BOOST_TEST(contains(detail, bad.expected), detail);
  }
}

// ---------------------------------------------------------------- the adapter

BOOST_AUTO_TEST_CASE(bad_adapter_configs_are_refused) {
  struct bad_case {
    std::string expected;
    std::function<void(json::object&)> edit;
  };
  const std::vector<bad_case> cases = {
      {"peft_type is \"IA3\"", [](json::object& a) { a["peft_type"] = "IA3"; }},
      {"use_dora is true", [](json::object& a) { a["use_dora"] = true; }},
      {"use_rslora is true", [](json::object& a) { a["use_rslora"] = true; }},
      {"bias must be \"none\"", [](json::object& a) { a["bias"] = "all"; }},
      {"r must be a positive integer", [](json::object& a) { a["r"] = 0; }},
      {"lora_alpha must be", [](json::object& a) { a.erase("lora_alpha"); }},
      {"rank_pattern is set",
       [](json::object& a) {
         a["rank_pattern"] = {{"q_proj", 8}};
       }},
      {"\"qkv\", which is not a supported Linear",
       [](json::object& a) { a["target_modules"].as_array().push_back("qkv"); }},
      {"target_modules must be a non-empty list",
       [](json::object& a) { a["target_modules"] = ".*proj"; }},
  };
  for (const bad_case& bad : cases) {
    tiny_copy copy;
    const fs::path config = copy.adapter() / "adapter_config.json";
    copy.edit_json(config, bad.edit);
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail, config.string()), detail);
    BOOST_TEST(contains(detail, bad.expected), detail);
  }
}

BOOST_AUTO_TEST_CASE(rank_that_mismatches_the_tensors_is_refused) {
  tiny_copy copy;
  copy.edit_json(copy.adapter() / "adapter_config.json", [](json::object& a) { a["r"] = 8; });
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, (copy.adapter() / "adapter_model.safetensors").string()), detail);
  BOOST_TEST(contains(detail, ".lora_A.weight\" has shape [16, "), detail);
  BOOST_TEST(contains(detail, "expected [8, "), detail);
}

BOOST_AUTO_TEST_CASE(fewer_target_modules_than_tensors_is_refused) {
  tiny_copy copy;
  copy.edit_json(copy.adapter() / "adapter_config.json", [](json::object& a) {
    a["target_modules"] = json::array{"q_proj",    "k_proj",  "v_proj",    "o_proj",
                                      "gate_proj", "up_proj", "down_proj", "linear_fc1"};
  });
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, "linear_fc2.lora_"), detail);
  BOOST_TEST(contains(detail, "not in target_modules"), detail);
}

BOOST_AUTO_TEST_CASE(attach_lora_checks_keys_shapes_and_pairs) {
  linear_weights fc1, qkv;
  fc1.weight.shape = {8, 4};
  qkv.weight.shape = {12, 4};
  const std::map<std::string, linear_weights*> linears = {
      {"model.visual.blocks.0.mlp.linear_fc1", &fc1}, {"model.visual.blocks.0.attn.qkv", &qkv}};
  lora_config config;
  config.r = 2;
  config.lora_alpha = 4;
  config.scale = 2;
  config.target_modules = {"linear_fc1"};
  const std::string m = "base_model.model.model.visual.blocks.0.mlp.linear_fc1";

  auto attach = [&](const std::vector<tensor_spec>& tensors) -> outcome<size_t> {
    temp_dir dir;
    write_file(dir.path / "adapter_model.safetensors", build_safetensors(tensors));
    auto file = safetensors_file::open(dir.path / "adapter_model.safetensors");
    BOOST_REQUIRE_MESSAGE(file.ok(), (file.ok() ? "" : file.error().detail));
    fc1.lora.reset();
    auto attached = attach_lora(config, *file, linears);
    if (attached.ok()) {
      BOOST_TEST(fc1.lora.has_value());
      BOOST_TEST(fc1.lora->b.f32()[3] == 3.0f);  // read while `file` still maps it
    }
    return attached;
  };
  auto ok = attach({{m + ".lora_A.weight", "F32", {2, 4}}, {m + ".lora_B.weight", "F32", {8, 2}}});
  BOOST_REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.error().detail));
  BOOST_TEST(*ok == 1u);
  BOOST_TEST(fc1.lora->scale == 2.0f);
  BOOST_TEST(!qkv.lora.has_value());

  struct bad_case {
    std::vector<tensor_spec> tensors;
    std::string expected;
  };
  const std::string q = "base_model.model.model.visual.blocks.0.attn.qkv";
  const std::vector<bad_case> cases = {
      {{{m + ".lora_A.weight", "F32", {2, 4}}}, "has lora_A but no lora_B"},
      {{{m + ".lora_A.weight", "F32", {2, 4}}, {m + ".lora_B.weight", "F32", {8, 3}}},
       "expected [8, 2]"},
      {{{m + ".lora_A.weight", "BF16", {2, 4}}, {m + ".lora_B.weight", "F32", {8, 2}}},
       "must be F32"},
      {{{q + ".lora_A.weight", "F32", {2, 4}}, {q + ".lora_B.weight", "F32", {12, 2}}},
       "not in target_modules"},
      {{{"base_model.model.model.visual.blocks.7.mlp.linear_fc1.lora_A.weight", "F32", {2, 4}}},
       "does not name a Linear"},
      {{{m + ".lora_magnitude_vector", "F32", {8}}}, "is not a LoRA key"},
      {{{"base_model.model.lm_head.lora_A.weight", "F32", {2, 4}}}, "outside model.visual"},
      {{}, "no LoRA pair for model.visual.blocks.0.mlp.linear_fc1"},
  };
  for (const bad_case& bad : cases) {
    auto attached = attach(bad.tensors);
    BOOST_REQUIRE(!attached.ok());
    BOOST_TEST(attached.error().status == 500);
    BOOST_TEST(contains(attached.error().detail, bad.expected), attached.error().detail);
    BOOST_TEST(contains(attached.error().detail, "adapter_model.safetensors"),
               attached.error().detail);
    if (!bad.tensors.empty())
      BOOST_TEST(contains(attached.error().detail, bad.tensors[0].name.substr(17, 30)),
                 attached.error().detail);
  }
}

// ---------------------------------------------------------------- config vs tensors

BOOST_AUTO_TEST_CASE(wrong_hidden_size_names_the_tensor) {
  tiny_copy copy;
  copy.edit_json(copy.base() / "config.json",
                 [](json::object& c) { c["vision_config"].as_object()["hidden_size"] = 64; });
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, "model.visual.patch_embed.proj.weight"), detail);
  BOOST_TEST(contains(detail, "model-0000"), detail);
  BOOST_TEST(contains(detail, "has shape [128, 3, 2, 16, 16], expected [64, 3, 2, 16, 16]"),
             detail);
}

BOOST_AUTO_TEST_CASE(wrong_intermediate_size_names_the_tensor) {
  tiny_copy copy;
  copy.edit_json(copy.base() / "config.json",
                 [](json::object& c) { c["text_config"].as_object()["intermediate_size"] = 96; });
  const std::string detail = load_error(copy.sources());
  BOOST_TEST(contains(detail, "model.language_model.layers.0.mlp.gate_proj.weight"), detail);
  BOOST_TEST(contains(detail, "expected [96, 64]"), detail);
}

BOOST_AUTO_TEST_CASE(untied_embeddings_are_refused) {
  tiny_copy copy;
  copy.edit_json(copy.base() / "config.json", [](json::object& c) {
    c["text_config"].as_object()["tie_word_embeddings"] = false;
  });
  BOOST_TEST(contains(load_error(copy.sources()), "tie_word_embeddings"));
}

BOOST_AUTO_TEST_CASE(index_problems_name_the_tensor) {
  const std::string index_name = "model.safetensors.index.json";
  {  // mtp.* entries are ignored
    tiny_copy copy;
    copy.edit_json(copy.base() / index_name, [](json::object& i) {
      i["weight_map"].as_object()["mtp.fc.weight"] = "model-00001-of-00002.safetensors";
    });
    auto loaded = load_model_weights(copy.sources());
    BOOST_TEST(loaded.ok(), (loaded.ok() ? "" : loaded.error().detail));
  }
  {  // a tensor the forward needs is not in the index
    tiny_copy copy;
    copy.edit_json(copy.base() / index_name, [](json::object& i) {
      i["weight_map"].as_object().erase("model.language_model.layers.3.self_attn.k_norm.weight");
    });
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail,
                        "tensor model.language_model.layers.3.self_attn.k_norm.weight is "
                        "missing from " +
                            (copy.base() / index_name).string()),
               detail);
  }
  {  // an unexpected base tensor
    tiny_copy copy;
    copy.edit_json(copy.base() / index_name, [](json::object& i) {
      i["weight_map"].as_object()["lm_head.weight"] = "model-00002-of-00002.safetensors";
    });
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail, "unexpected tensor lm_head.weight"), detail);
    BOOST_TEST(contains(detail, "model-00002-of-00002.safetensors"), detail);
  }
  {  // a tensor assigned to the wrong shard
    tiny_copy copy;
    const json::value index = read_json(copy.base() / index_name);
    std::string name, other;
    for (const auto& [key, shard] : index.at("weight_map").as_object()) {
      name = std::string(key);
      other = shard.as_string() == "model-00001-of-00002.safetensors"
                  ? "model-00002-of-00002.safetensors"
                  : "model-00001-of-00002.safetensors";
      break;
    }
    copy.edit_json(copy.base() / index_name,
                   [&](json::object& i) { i["weight_map"].as_object()[name] = other; });
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail, name), detail);
    BOOST_TEST(contains(detail, other), detail);
  }
  {  // a shard the index names is not in the directory
    tiny_copy copy;
    copy.edit_json(copy.base() / index_name, [](json::object& i) {
      i["weight_map"].as_object()["model.language_model.norm.weight"] = "model-extra.safetensors";
    });
    const std::string detail = load_error(copy.sources());
    BOOST_TEST(contains(detail, "model-extra.safetensors"), detail);
    BOOST_TEST(contains(detail, "missing"), detail);
  }
}
