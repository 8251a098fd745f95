// The weights lock: reading it, and load_model_weights refusing files that differ from it
// (hash, size, unlisted, missing) and malformed locks.
#define BOOST_TEST_MODULE model_weight_lock
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "model/weight_loader.hpp"
#include "model/weight_lock.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace cua_s1;
using namespace cua_s1::model_test;

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
