// Shared helpers for the codec tests: fixture manifest, file reading, base64 encoding, SHA-256.
#pragma once

#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <span>
#include <string>
#include <vector>

namespace codec_test {

inline std::string fixture_dir() { return std::string(CUA_S1_FIXTURES) + "/codec"; }

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct fixture_case {
  std::string name, file, mime, detail, sha256, note;
  int status = 0;
  uint32_t width = 0, height = 0;
};

// Reads tests/fixtures/codec/manifest.json (written by tools/make_codec_fixtures.py).
inline std::vector<fixture_case> load_manifest() {
  const auto bytes = read_file(fixture_dir() + "/manifest.json");
  const auto doc = boost::json::parse(std::string(bytes.begin(), bytes.end()));
  std::vector<fixture_case> cases;
  for (const auto& v : doc.at("cases").as_array()) {
    const auto& o = v.as_object();
    fixture_case c;
    c.name = o.at("name").as_string().c_str();
    c.file = o.at("file").as_string().c_str();
    c.mime = o.at("mime").as_string().c_str();
    c.status = static_cast<int>(o.at("status").as_int64());
    c.detail = o.at("detail").as_string().c_str();
    if (o.contains("sha256")) {
      c.sha256 = o.at("sha256").as_string().c_str();
      c.width = static_cast<uint32_t>(o.at("width").as_int64());
      c.height = static_cast<uint32_t>(o.at("height").as_int64());
    }
    if (o.contains("note")) c.note = o.at("note").as_string().c_str();
    cases.push_back(std::move(c));
  }
  return cases;
}

inline std::string base64_encode(const std::vector<uint8_t>& data) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    for (int k = 3; k >= 0; --k) out.push_back(alphabet[(v >> (6 * k)) & 63]);
  }
  if (data.size() - i == 1) {
    const uint32_t v = uint32_t{data[i]} << 16;
    out += {alphabet[v >> 18], alphabet[(v >> 12) & 63], '=', '='};
  } else if (data.size() - i == 2) {
    const uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += {alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63], '='};
  }
  return out;
}

inline std::string sha256_hex(std::span<const uint8_t> data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  std::ostringstream hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex << "0123456789abcdef"[digest[i] >> 4] << "0123456789abcdef"[digest[i] & 15];
  }
  return hex.str();
}

inline std::string data_url(const std::string& mime, const std::vector<uint8_t>& bytes) {
  return "data:image/" + mime + ";base64," + base64_encode(bytes);
}

}  // namespace codec_test
