// What the engine answers for one request: an HTTP status and a JSON body.
#pragma once

#include <cstdint>
#include <string>

namespace cua_s1 {

struct decision_response {
  int status = 200;
  std::string body;  // the answer JSON, or {"detail": "..."} for an error
  int retry_after_seconds = 0;  // > 0: send Retry-After (503 at capacity)
  uint64_t pass = 0;  // the model pass that ran it (named in its log line); 0: none ran it
};

}  // namespace cua_s1
