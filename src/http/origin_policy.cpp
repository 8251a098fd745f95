// Origin checks against the server's own origin and --allowed-origins (see origin_policy.hpp).
#include "http/origin_policy.hpp"

#include <cctype>

namespace cua_s1 {
namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// An origin as browsers serialise it (RFC 6454): lower case, without a trailing "/" or the
// scheme's default port, so that equal origins compare equal as strings.
std::string normalised(std::string_view origin) {
  std::string out(trimmed(origin));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!out.empty() && out.back() == '/') out.pop_back();
  struct default_port {
    std::string_view scheme, port;
  };
  for (const default_port& implied : {default_port{"http://", ":80"}, {"https://", ":443"}})
    if (out.starts_with(implied.scheme) && out.ends_with(implied.port))
      out.resize(out.size() - implied.port.size());
  return out;
}

// "scheme://host[:port]" (no path, query or user) or "null".
bool is_origin(std::string_view origin) {
  if (origin == "null") return true;
  const size_t separator = origin.find("://");
  if (separator == std::string_view::npos || separator == 0) return false;
  for (char c : origin.substr(0, separator))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.')
      return false;
  const std::string_view authority = origin.substr(separator + 3);
  if (authority.empty()) return false;
  for (char c : authority)
    if (c == '/' || c == '?' || c == '#' || c == '@' || std::isspace(static_cast<unsigned char>(c)))
      return false;
  return true;
}

}  // namespace

std::optional<std::vector<std::string>> parse_allowed_origins(std::string_view list) {
  std::vector<std::string> origins;
  while (true) {
    const size_t comma = list.find(',');
    const std::string origin = normalised(list.substr(0, comma));
    if (!is_origin(origin)) return std::nullopt;
    origins.push_back(origin);
    if (comma == std::string_view::npos) return origins;
    list.remove_prefix(comma + 1);
  }
}

bool origin_allowed(std::string_view origin, std::string_view authority,
                    const std::vector<std::string>& allowed) {
  if (trimmed(origin).empty()) return true;
  const std::string given = normalised(origin);
  for (const std::string& listed : allowed)
    if (given == listed) return true;
  if (trimmed(authority).empty()) return false;
  for (std::string_view scheme : {"http://", "https://"})
    if (given == normalised(std::string(scheme) + std::string(trimmed(authority)))) return true;
  return false;
}

}  // namespace cua_s1
