// The API keys a server requires (Authorization: Bearer <key>) and the constant-time check of
// the key a request presents. Only SHA-256 digests of the keys are kept.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

// What a request's Authorization header amounts to against the configured keys.
enum class key_check { accepted, missing, invalid };

class api_key_set {
 public:
  api_key_set() = default;
  explicit api_key_set(const std::vector<std::string>& keys);

  // No key configured: every request is accepted.
  bool empty() const { return digests_.empty(); }

  // `authorization`: the request's Authorization header ("Bearer <key>", the scheme in any
  // case). Compares the presented key's digest with every configured digest, each byte of each
  // one, so that the time taken says nothing about which key or how much of it matched.
  key_check check(std::string_view authorization) const;

 private:
  std::vector<std::string> digests_;  // SHA-256 of each key, lowercase hex
};

}  // namespace cua_s1
