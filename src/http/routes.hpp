// The HTTP API apart from its transport, in two stages. The header stage decides from the
// request line and headers alone (Host, Origin, API key, route, method, content type,
// readiness); the
// body stage answers (health, metrics, decisions), counts the request in the metrics and logs it.
// The HTTP and WebSocket sessions share them and keep only reading, deadlines and writing.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/decision_engine.hpp"
#include "http/api_keys.hpp"
#include "http/error_log_budget.hpp"

namespace cua_s1 {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_request_header = boost::beast::http::request_header<>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

inline constexpr const char* decision_route = "/v1/systemone";
inline constexpr const char* websocket_route = "/v1/systemone/ws";
inline constexpr const char* models_route = "/v1/models";

// What the server answers besides the engine's own state.
struct route_settings {
  std::string weights_description;  // e.g. "bundled tiny model", shown in /health and /metrics
  // Web pages allowed besides the server's own origin (parse_allowed_origins, origin_policy.hpp);
  // a request with any other Origin is refused (403).
  std::vector<std::string> allowed_origins;
  // With any key, /v1/* (the WebSocket included) needs "Authorization: Bearer <key>", else 401;
  // /metrics too when metrics_require_key; /health* never.
  api_key_set api_keys;
  bool metrics_require_key = false;
};

// What the headers of one request decide (the header stage's result).
struct request_plan {
  // refused: `refusal` is the answer; websocket_upgrade: the WebSocket session takes over.
  enum class destination { decision, websocket_upgrade, health, liveness, metrics, models, refused };
  destination to = destination::refused;
  std::string route;                     // the label of its metrics and its "request" log line
  std::string request_id;                // the client's X-Request-Id when usable, else a new one
  // Why the headers alone refuse it: 400 401 403 404 405 415 426 503.
  std::optional<http_response> refusal;
  // Refused 401: why ("missing" or "invalid" key), for the metrics.
  const char* key_refused = nullptr;
  // The client's W3C traceparent when valid (trace_context.hpp), else empty: echoed and logged.
  std::string traceparent;
  // The client waits for "100 Continue" before sending its body (Expect: 100-continue, HTTP/1.1):
  // the session sends it, or answers the refusal at once and closes, the body unread.
  bool continue_expected = false;

  // The body goes to the engine: the session watches for a client that goes away meanwhile.
  bool awaits_decision() const { return to == destination::decision; }
};

// The header stage: the route of `header` (the path of its target, in origin or absolute form,
// without the query), or why it is refused. Checks on the headers alone
// (keys, Expect: 100-continue, body budgets) belong here, so that a session can refuse a request
// before reading its body. Touches neither the metrics nor the log.
request_plan plan_request(const http_request_header& header, const decision_engine& engine,
                          const route_settings& settings);

// The body stage: the response to `request` as `plan` routed it (its refusal when it has one),
// with its X-Request-Id, counted in the metrics and logged ("request"). A decision drops its work
// not started yet once `client_gone` is set. The session sets Connection (keep-alive) itself.
boost::asio::awaitable<http_response> route(request_plan plan, http_request request,
                                            decision_engine& engine, const route_settings& settings,
                                            cancel_flag client_gone);

// The answer to a request that could not be read (400 malformed, 408 timed out, 413 body too
// large, 431 headers too large) after `error`, closing the connection: counted as route
// "unparsed" and logged ("request_rejected").
http_response unreadable_request_response(const boost::beast::error_code& error,
                                          const http_request_header& header,
                                          server_metrics& metrics);

// The reply to WebSocket message `sequence` (a /v1/systemone body):
// {"request_id":..., "sequence":N, "status":S, "body":<the HTTP body, verbatim>}, counted and
// logged like an HTTP request on the WebSocket route (with the upgrade's trace id, if any); the
// line of a failure only while the connection's `failures` budget admits it.
boost::asio::awaitable<std::string> answer_websocket_message(std::string body,
                                                             std::string request_id,
                                                             uint64_t sequence,
                                                             std::string trace_id,
                                                             decision_engine& engine,
                                                             cancel_flag client_gone,
                                                             error_log_budget& failures);

}  // namespace cua_s1
