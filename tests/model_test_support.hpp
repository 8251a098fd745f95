// Helpers shared by the model loader tests (tests/model_*_test.cpp): temporary directories,
// file and JSON I/O, a relockable copy of the tiny fixture, raw safetensors bytes.
#pragma once

#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/sha256.hpp"
#include "model/weight_loader.hpp"
#include "test_support.hpp"

namespace cua_s1::model_test {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A fresh directory removed at the end of the test.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("cua-s1-loader-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

inline std::string read_bytes(const std::filesystem::path& path) {
  return test::read_file(path.string());
}

inline boost::json::value read_json(const std::filesystem::path& path) {
  return boost::json::parse(read_bytes(path));
}

inline void write_json(const std::filesystem::path& path, const boost::json::value& value) {
  write_file(path, boost::json::serialize(value));
}

// A copy of tests/fixtures/tiny (base/, multimodal/, weights.lock.json).
struct tiny_copy {
  temp_dir dir;
  tiny_copy() {
    namespace fs = std::filesystem;
    for (const char* part : {"base", "multimodal"})
      fs::copy(test::fixture_path(std::string("tiny/") + part), dir.path / part,
               fs::copy_options::recursive);
    fs::copy_file(test::fixture_path("tiny/weights.lock.json"), lock());
    for (const auto& entry : fs::recursive_directory_iterator(dir.path))
      fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add);
  }
  std::filesystem::path base() const { return dir.path / "base"; }
  std::filesystem::path adapter() const { return dir.path / "multimodal"; }
  std::filesystem::path lock() const { return dir.path / "weights.lock.json"; }
  weight_sources sources() const { return {base(), adapter(), lock(), {}}; }

  // Recomputes size and SHA-256 (the repo's sha256_hex) of every listed file that exists.
  void relock() const {
    boost::json::value lock_json = read_json(lock());
    for (auto& artifact : lock_json.at("artifacts").as_array()) {
      const bool is_base = artifact.at("role").as_string() == "base";
      for (auto& [name, entry] : artifact.at("files").as_object()) {
        std::string relative(name);
        if (!is_base) relative = relative.substr(relative.find('/') + 1);
        const std::filesystem::path path = (is_base ? base() : adapter()) / relative;
        if (!std::filesystem::exists(path)) continue;
        const std::string bytes = read_bytes(path);
        entry.as_object()["size"] = bytes.size();
        entry.as_object()["sha256"] = cua_s1::sha256_hex(bytes.data(), bytes.size());
      }
    }
    write_json(lock(), lock_json);
  }

  // Edits a JSON file of the copy and updates the lock.
  template <class Edit>
  void edit_json(const std::filesystem::path& path, Edit edit) const {
    boost::json::value value = read_json(path);
    edit(value.as_object());
    write_json(path, value);
    relock();
  }
};

// The detail of load_model_weights' refusal of `sources` (which must be a 500).
inline std::string load_error(const weight_sources& sources) {
  auto loaded = load_model_weights(sources);
  BOOST_REQUIRE(!loaded.ok());
  BOOST_TEST(loaded.error().status == 500);
  BOOST_TEST_MESSAGE("refused: " << loaded.error().detail);
  return loaded.error().detail;
}

// A file: 8-byte little-endian `length` (default: the header's), the header, `data` zero bytes.
inline std::vector<std::byte> safetensors_bytes(const std::string& header, size_t data,
                                                std::optional<uint64_t> length = std::nullopt) {
  std::vector<std::byte> out(8 + header.size() + data);
  const uint64_t n = length.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[size_t(i)] = std::byte((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// The bytes of `tensor` read straight from a safetensors file (independent of the parser).
inline std::string raw_tensor_bytes(const std::filesystem::path& file, const std::string& tensor) {
  const std::string bytes = read_bytes(file);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  const boost::json::value header = boost::json::parse(bytes.substr(8, n));
  const auto& offsets = header.at(tensor).at("data_offsets").as_array();
  const auto begin = offsets[0].to_number<size_t>(), end = offsets[1].to_number<size_t>();
  return bytes.substr(8 + n + begin, end - begin);
}

}  // namespace cua_s1::model_test
