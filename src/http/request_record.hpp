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
// request id, the WebSocket sequence number when there is one, the W3C trace id when the client
// sent one (trace_context.hpp), and the milliseconds since `started`.
void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    std::optional<uint64_t> sequence = std::nullopt,
                    std::string_view trace_id = {});

}  // namespace cua_s1
