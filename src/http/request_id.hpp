// Request ids: the client's X-Request-Id when usable, else a new process-unique id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cua_s1 {

// `given` when it is 1-128 printable ASCII characters, else "<process tag>-<counter>" (hex).
std::string request_id_for(std::string_view given);

// The id of WebSocket message `sequence`: "<upgrade id>/<sequence>" (the upgrade's id shortened
// to fit 128 characters), or a new id when the upgrade carried no usable one (`upgrade_id` empty).
std::string message_request_id(const std::string& upgrade_id, uint64_t sequence);

}  // namespace cua_s1
