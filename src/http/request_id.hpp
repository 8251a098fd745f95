// Request ids: the client's X-Request-Id when usable, else a new process-unique id.
#pragma once

#include <string>
#include <string_view>

namespace cua_s1 {

// `given` when it is 1-128 printable ASCII characters, else "<process tag>-<counter>" (hex).
std::string request_id_for(std::string_view given);

}  // namespace cua_s1
