// Which web pages may use the server. Browsers send an Origin header on cross-site requests,
// on POSTs and on WebSocket upgrades; a request whose Origin is neither the server's own nor one
// listed with --allowed-origins is refused (403), so that any page a user opens cannot drive a
// server on their machine. Clients that send no Origin (not a browser's page) are unaffected.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

// The origins of a comma-separated `list` ("https://app.example, http://localhost:3000"),
// normalised for origin_allowed; nullopt when an entry is not scheme://host[:port] or "null".
std::optional<std::vector<std::string>> parse_allowed_origins(std::string_view list);

// Whether a request with Origin `origin` (empty: none) that named the server `authority` (its
// Host header, or the authority of an absolute-form target) may be served: no Origin, the
// server's own origin (http or https, the same host and port, case and default ports aside),
// or one of `allowed` (from parse_allowed_origins).
bool origin_allowed(std::string_view origin, std::string_view authority,
                    const std::vector<std::string>& allowed);

}  // namespace cua_s1
