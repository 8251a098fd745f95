// The safetensors header parser on hand-made headers; safetensors_file mapping the tiny fixture.
#define BOOST_TEST_MODULE model_safetensors_file
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/safetensors_file.hpp"
#include "model_test_support.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace cua_s1;
using namespace cua_s1::model_test;

namespace {

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

}  // namespace

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
