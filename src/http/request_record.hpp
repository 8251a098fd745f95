// The end of one request on either route: counted in the metrics and logged once, with its id.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/metrics.hpp"

namespace cua_s1 {

// Counts `status` for `route` and writes the "request" log line (warning level for 5xx) with the
// What a request's log line carries besides its id, route, status and time, when known.
struct request_log_details {
  std::optional<uint64_t> sequence;  // the WebSocket message's sequence number
  std::string_view trace_id;         // the W3C trace id the client sent (trace_context.hpp)
  uint64_t pass = 0;                 // the model pass that ran the request; 0: none did
};

// Counts `status` for `route` and writes the "request" log line (warning level for 5xx) with the
// request id, the details known and the milliseconds since `started`.
void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    const request_log_details& details = {});

}  // namespace cua_s1
