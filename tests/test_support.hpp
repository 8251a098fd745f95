// Small helpers shared by the test suites: fixture files, JSON fixtures, base64, SHA-256.
#pragma once

#include <openssl/evp.h>

#include <boost/json.hpp>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cua_s1::test {

// The fixtures directory compiled in, or $CUA_S1_FIXTURES_DIR (test binaries run on another
// machine, e.g. the GPU host, where the source tree sits elsewhere).
inline std::string fixtures_dir() {
  const char* override_dir = std::getenv("CUA_S1_FIXTURES_DIR");
  return override_dir && *override_dir ? std::string(override_dir) : std::string(CUA_S1_FIXTURES);
}

inline std::string fixture_path(const std::string& relative) {
  return fixtures_dir() + "/" + relative;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline boost::json::value read_json_fixture(const std::string& relative) {
  return boost::json::parse(read_file(fixture_path(relative)));
}

inline std::string base64_decode(const std::string& text) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    buffer = (buffer << 6) | static_cast<uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

inline std::string sha256_hex(const void* data, size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

}  // namespace cua_s1::test
