// The PEFT adapter: adapter_config.json checks and attach_lora's key, shape and pair checks.
#define BOOST_TEST_MODULE model_lora_adapter
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/lora_adapter.hpp"
#include "model/safetensors_file.hpp"
#include "model/weight_loader.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace cua_s1;
using namespace cua_s1::model_test;

namespace {

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

}  // namespace

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
