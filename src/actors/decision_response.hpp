// What the engine answers for one request: an HTTP status and a JSON body.
#pragma once

#include <string>

namespace cua_s1 {

struct decision_response {
  int status = 200;
  std::string body;  // the answer JSON, or {"detail": "..."} for an error
  int retry_after_seconds = 0;  // > 0: send Retry-After (503 at capacity)
};

}  // namespace cua_s1
