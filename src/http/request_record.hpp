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
// request id, the WebSocket sequence number when there is one, the model pass that ran the
// request when one did (`pass` > 0), and the milliseconds since `started`.
void record_request(server_metrics& metrics, std::string_view route, int status,
                    const std::string& request_id, std::chrono::steady_clock::time_point started,
                    std::optional<uint64_t> sequence = std::nullopt, uint64_t pass = 0);

}  // namespace cua_s1
