// What the engine answers for one request: an HTTP status and a JSON body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace cua_s1 {

// Where a decision's time went, in milliseconds: waiting (admission to the decode pool, for the
// executor, for the answer thread), decoding and preparing the image and prompts, and the model.
struct stage_durations {
  double queue_ms = 0;
  double decode_ms = 0;
  double inference_ms = 0;
};

struct decision_response {
  int status = 200;
  std::string body;  // the answer JSON, or {"detail": "..."} for an error
  int retry_after_seconds = 0;  // > 0: send Retry-After (503 at capacity)
  std::optional<stage_durations> durations = std::nullopt;  // a decision that ran: sent as Server-Timing
  uint64_t pass = 0;  // the model pass that ran it (named in its log line); 0: none ran it
};

}  // namespace cua_s1
