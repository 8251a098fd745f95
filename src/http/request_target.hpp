// What the route of a request is read from: the path of its target, in origin form
// ("/health?x=1") or absolute form ("http://host:8000/health"), without the query.
#pragma once

#include <string_view>

namespace cua_s1 {

struct request_target {
  std::string_view path;       // "/health" for both forms above; the target as is for others
  std::string_view authority;  // "host:8000" of the absolute form (RFC 9112 3.2.2), else empty
};

// Splits `target` (views into it). The query never changes the route; a target in absolute form
// (http or https) routes by its path, as RFC 9112 requires servers to accept it.
request_target parse_request_target(std::string_view target);

}  // namespace cua_s1
