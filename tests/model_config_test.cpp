// config.json: the tiny fixture's and a real-shaped config are read, bad ones name file and field.
#define BOOST_TEST_MODULE model_config
#include <array>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace json = boost::json;
using namespace cua_s1;
using namespace cua_s1::model_test;

namespace {

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
