// load_model_weights on the tiny fixture (every tensor, LoRA pair and value), and its checks of
// config.json and the shard index against the tensors, on malformed copies.
#define BOOST_TEST_MODULE model_weight_loader
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "model/weight_loader.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace cua_s1;
using namespace cua_s1::model_test;

namespace {

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

}  // namespace

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
