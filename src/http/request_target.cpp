// Request-target forms of RFC 9112 section 3.2 (see request_target.hpp).
#include "http/request_target.hpp"

#include <cctype>

namespace cua_s1 {
namespace {

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

// `path_and_query` without its query ("?...").
std::string_view without_query(std::string_view path_and_query) {
  return path_and_query.substr(0, path_and_query.find('?'));
}

}  // namespace

request_target parse_request_target(std::string_view target) {
  if (target.starts_with('/')) return {without_query(target), {}};
  for (std::string_view scheme : {"http://", "https://"}) {
    if (!starts_with_ignoring_case(target, scheme)) continue;
    const std::string_view rest = target.substr(scheme.size());
    const size_t authority_end = rest.find_first_of("/?");
    const std::string_view authority = rest.substr(0, authority_end);
    if (authority_end == std::string_view::npos || rest[authority_end] == '?')
      return {"/", authority};  // "http://host" and "http://host?q" name the path "/"
    return {without_query(rest.substr(authority_end)), authority};
  }
  return {target, {}};  // asterisk or authority form: no route of ours
}

}  // namespace cua_s1
