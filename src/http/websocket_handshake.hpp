// The checks Beast's websocket accept makes on an upgrade request (RFC 6455 section 4.2.1),
// made before it, so that a refused handshake is answered like every other error: {"detail":
// ...} JSON with the request's X-Request-Id, and without Beast's plain-text body and "Server:
// Boost.Beast" banner.
#pragma once

#include <optional>
#include <string>

#include "http/routes.hpp"

namespace cua_s1 {

// Why Beast would refuse `upgrade` (already routed as an upgrade by plan_request): 400 with
// Beast's reason as the detail, or 426 with Sec-WebSocket-Version: 13 for another protocol
// version; nothing when the handshake can proceed. The answer closes the connection.
std::optional<http_response> websocket_handshake_refusal(const http_request& upgrade,
                                                         const std::string& request_id);

}  // namespace cua_s1
