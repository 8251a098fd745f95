// Headers that clients and SDKs read from our answers, set the same way on every route:
// the request id (X-Request-Id and x-typesafe-request-id), the retry delay (Retry-After in
// seconds and Retry-After-Ms) and the stage durations of a decision (Server-Timing).
#pragma once

#include <string>

#include "actors/decision_response.hpp"
#include "http/routes.hpp"

namespace cua_s1 {

// X-Request-Id and x-typesafe-request-id (what the System One SDKs read).
void set_request_id(http_response& response, const std::string& request_id);

// Retry-After (seconds, RFC 9110 section 10.2.3) and Retry-After-Ms (the same in milliseconds).
void set_retry_after(http_response& response, int seconds);

// Server-Timing (https://www.w3.org/TR/server-timing/): queue, decode and inference in ms.
void set_server_timing(http_response& response, const stage_durations& durations);

}  // namespace cua_s1
