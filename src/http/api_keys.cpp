// Bearer-key checks over SHA-256 digests, in time independent of the key presented.
#include "http/api_keys.hpp"

#include <boost/beast/core/string.hpp>

#include "common/sha256.hpp"

namespace cua_s1 {
namespace {

// The token of "Bearer <token>" (RFC 6750 section 2.1; the scheme is case-insensitive, RFC 9110
// section 11.1), without surrounding blanks; empty when the header is another scheme or blank.
std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "bearer";
  if (authorization.size() <= scheme.size() ||
      !boost::beast::iequals(authorization.substr(0, scheme.size()), scheme) ||
      (authorization[scheme.size()] != ' ' && authorization[scheme.size()] != '\t'))
    return {};
  std::string_view token = authorization.substr(scheme.size());
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

}  // namespace

api_key_set::api_key_set(const std::vector<std::string>& keys) {
  digests_.reserve(keys.size());
  for (const std::string& key : keys) digests_.push_back(sha256_hex(key.data(), key.size()));
}

key_check api_key_set::check(std::string_view authorization) const {
  const std::string_view token = bearer_token(authorization);
  if (token.empty()) return key_check::missing;
  const std::string presented = sha256_hex(token.data(), token.size());
  // Digests all have the same length; no early exit on a match or a difference.
  unsigned matched = 0;
  for (const std::string& digest : digests_) {
    unsigned difference = 0;
    for (size_t i = 0; i < digest.size(); ++i)
      difference |= static_cast<unsigned char>(digest[i] ^ presented[i]);
    matched |= ((difference - 1) >> 8) & 1;  // 1 when difference is 0, without a branch
  }
  return matched ? key_check::accepted : key_check::invalid;
}

}  // namespace cua_s1
