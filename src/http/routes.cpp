// The routes of the HTTP API: the header stage (which route, or why not), the body stage
// (health, metrics, decisions) and the answers shared by the HTTP and WebSocket sessions.
#include "http/routes.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <cctype>
#include <chrono>
#include <iterator>
#include <string_view>
#include <utility>

#include "api/body_decoding.hpp"
#include "api/decision_answer.hpp"
#include "api/python_json.hpp"
#include "codec/content_decoding.hpp"
#include "common/json_log.hpp"
#include "http/model_list.hpp"
#include "http/origin_policy.hpp"
#include "http/request_id.hpp"
#include "http/request_record.hpp"
#include "http/request_target.hpp"
#include "http/response_headers.hpp"
#include "http/trace_context.hpp"

// GCC warns that route()'s coroutine frame, allocated by Asio's promise operator new, is freed by
// its sized operator delete "from a mismatched allocation function": a false positive of
// coroutine promises that declare both (GCC PR middle-end/109224); the request plan's size
// decides whether it shows.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using destination = request_plan::destination;

http_response json_response(unsigned version, int status, std::string body) {
  http_response response{static_cast<http::status>(status), version};
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

http_response detail_response(unsigned version, int status, std::string detail) {
  return json_response(version, status, serialize_error({status, std::move(detail)}));
}

std::string health_body(const decision_engine& engine, const route_settings& settings) {
  if (!engine.ready()) return std::string("{\"status\":\"") + engine.unready_state() + "\"}";
  std::string out = "{\"status\":\"ready\",\"model\":\"";
  append_json_string_body(out, engine.identity());
  out += "\",\"modality\":\"multimodal\",\"backend\":\"";
  append_json_string_body(out, engine.backend_description());
  out += "\",\"weights\":\"";
  append_json_string_body(out, settings.weights_description);
  out += "\"}";
  return out;
}

http_response metrics_response(unsigned version, const decision_engine& engine,
                               const route_settings& settings) {
  http_response response{http::status::ok, version};
  response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  response.body() = engine.metrics().exposition(static_cast<int64_t>(engine.queued_requests()),
                                                engine.identity(), settings.weights_description,
                                                engine.backend_description(), engine.ready());
  response.prepare_payload();
  return response;
}

// The Content-Encoding of `header` when the server reads it (one coding: identity, gzip or zstd),
// else nullopt: an unknown coding, or several stacked in one value or in several headers.
std::optional<content_coding> body_coding(const http_request_header& header) {
  const auto values = header.equal_range(http::field::content_encoding);
  if (std::distance(values.first, values.second) > 1) return std::nullopt;
  return parse_content_encoding(header[http::field::content_encoding]);
}

// One /v1/systemone body, on either route: 503 (Retry-After 1) while the engine is not ready,
// else the engine's answer. Readiness is checked again here because it may have changed while
// the body was read, and a WebSocket message has no headers of its own.
asio::awaitable<decision_response> decide(decision_engine& engine, decision_body body,
                                          std::string request_id, cancel_flag client_gone) {
  if (!engine.ready()) {
    decision_response unavailable;
    unavailable.status = 503;
    unavailable.body = serialize_error({503, engine.unavailable_detail()});
    unavailable.retry_after_seconds = 1;
    co_return unavailable;
  }
  co_return co_await engine.async_decide(std::move(body), std::move(request_id),
                                         std::move(client_gone), asio::use_awaitable);
}

// The HTTP answer to a decision: its status and body, Retry-After, Server-Timing.
http_response decision_http_response(unsigned version, decision_response decided) {
  http_response response = json_response(version, decided.status, std::move(decided.body));
  if (decided.retry_after_seconds > 0) set_retry_after(response, decided.retry_after_seconds);
  if (decided.durations) set_server_timing(response, *decided.durations);
  return response;
}

// The body of a decision request with the headers that say how to read it.
decision_body body_of(http_request& request) {
  decision_body body;
  body.bytes = std::move(request.body());
  body.content_type = std::string(request[http::field::content_type]);
  body.content_encoding = std::string(request[http::field::content_encoding]);
  return body;
}

std::string websocket_reply_text(const std::string& request_id, uint64_t sequence,
                                 const decision_response& decided) {
  std::string out = "{\"request_id\":\"";
  append_json_string_body(out, request_id);
  out += "\",\"sequence\":" + std::to_string(sequence) +
         ",\"status\":" + std::to_string(decided.status) + ",\"body\":" + decided.body + "}";
  return out;
}

// Whether `path` is one of our routes (the label of its metrics); any other is "other".
bool is_route(std::string_view path) {
  for (std::string_view route :
       {decision_route, websocket_route, models_route, "/health", "/health/ready", "/health/live",
        "/metrics"})
    if (path == route) return true;
  return false;
}

// RFC 9112 section 3.2: an HTTP/1.1 request without a Host header, or any request with more than
// one, is answered 400.
bool has_one_host(const http_request_header& header) {
  const auto hosts = header.equal_range(http::field::host);
  const auto count = std::distance(hosts.first, hosts.second);
  return count == 1 || (count == 0 && header.version() < 11);
}

// The key check of a request to `path`: accepted when no key is configured or the route needs
// none (/v1/* needs one, /metrics with --metrics-require-key).
key_check check_key(std::string_view path, const http_request_header& header,
                    const route_settings& settings) {
  const bool needs_key =
      path.starts_with("/v1/") || (path == "/metrics" && settings.metrics_require_key);
  if (settings.api_keys.empty() || !needs_key) return key_check::accepted;
  return settings.api_keys.check(header[http::field::authorization]);
}

// The end of every routed answer: its ids and trace echoed, counted and logged (with the model
// pass that ran it, when one did).
void finish_response(const request_plan& plan, http_response& response, server_metrics& metrics,
                     std::chrono::steady_clock::time_point started, uint64_t pass) {
  set_request_id(response, plan.request_id);
  if (!plan.traceparent.empty()) response.set("traceparent", plan.traceparent);
  if (plan.key_refused) metrics.count_auth_failure(plan.key_refused);
  const request_log_details details{
      .sequence = std::nullopt, .trace_id = trace_id_of(plan.traceparent), .pass = pass};
  record_request(metrics, plan.route, static_cast<int>(response.result_int()), plan.request_id,
                 started, details);
}

}  // namespace

request_plan plan_request(const http_request_header& header, const decision_engine& engine,
                          const route_settings& settings) {
  request_plan plan;
  const request_target target = parse_request_target(header.target());
  const std::string path(target.path);
  // RFC 9112 3.2.2: the authority of an absolute-form target replaces the Host header.
  const std::string_view authority =
      target.authority.empty() ? std::string_view(header[http::field::host]) : target.authority;
  plan.route = is_route(path) ? path : "other";
  const unsigned version = header.version();
  const bool is_get = header.method() == http::verb::get || header.method() == http::verb::head;
  auto refuse = [&](int status, std::string detail) -> http_response& {
    plan.to = destination::refused;
    plan.refusal = detail_response(version, status, std::move(detail));
    return *plan.refusal;
  };
  auto get_only = [&](destination to) {
    if (is_get)
      plan.to = to;
    else
      refuse(405, "method not allowed").set(http::field::allow, "GET");
  };
  if (!has_one_host(header)) {
    refuse(400, "a request must carry one Host header");
  } else if (!origin_allowed(header[http::field::origin], authority, settings.allowed_origins)) {
    refuse(403, "origin not allowed");
  } else if (const key_check key = check_key(path, header, settings);
             key != key_check::accepted) {
    const bool missing = key == key_check::missing;
    plan.key_refused = missing ? "missing" : "invalid";
    refuse(401, missing ? "missing API key: send \"Authorization: Bearer <key>\""
                        : "invalid API key")
        .set(http::field::www_authenticate,
             missing ? "Bearer" : "Bearer error=\"invalid_token\"");
  } else if (path == websocket_route) {
    if (beast::websocket::is_upgrade(header))
      plan.to = destination::websocket_upgrade;
    else
      refuse(426, "WebSocket upgrade required").set(http::field::upgrade, "websocket");
  } else if (path == decision_route) {
    const auto content_type = header[http::field::content_type];
    if (header.method() != http::verb::post)
      refuse(405, "method not allowed").set(http::field::allow, "POST");
    else if (!parse_body_media_type(content_type))
      refuse(415, std::string(unreadable_media_type));
    else if (!body_coding(header))
      refuse(415, std::string(unreadable_coding));
    else if (!engine.ready())
      set_retry_after(refuse(503, engine.unavailable_detail()), 1);
    else
      plan.to = destination::decision;
  } else if (path == "/health" || path == "/health/ready") {
    get_only(destination::health);
  } else if (path == "/health/live") {
    get_only(destination::liveness);
  } else if (path == "/metrics") {
    get_only(destination::metrics);
  } else if (path == models_route) {
    get_only(destination::models);
  } else {
    refuse(404, "unknown route");
  }
  plan.request_id = request_id_for(header["X-Request-Id"]);
  plan.traceparent = valid_traceparent(header["traceparent"]);
  plan.continue_expected =
      version >= 11 && beast::iequals(header[http::field::expect], "100-continue");
  return plan;
}

asio::awaitable<http_response> route(request_plan plan, http_request request,
                                     decision_engine& engine, const route_settings& settings,
                                     cancel_flag client_gone) {
  const auto started = std::chrono::steady_clock::now();
  const unsigned version = request.version();
  http_response response;
  uint64_t pass = 0;  // the model pass that ran a decision
  switch (plan.to) {
    case destination::refused:
      response = std::move(*plan.refusal);
      break;
    case destination::decision: {
      decision_response decided =
          co_await decide(engine, body_of(request), plan.request_id, std::move(client_gone));
      pass = decided.pass;
      response = decision_http_response(version, std::move(decided));
      break;
    }
    case destination::health:
      response = json_response(version, engine.ready() ? 200 : 503, health_body(engine, settings));
      break;
    case destination::liveness:
      response = json_response(version, 200, "{\"status\":\"alive\"}");
      break;
    case destination::metrics:
      response = metrics_response(version, engine, settings);
      break;
    case destination::models:
      response = json_response(version, 200, model_list_body(settings.weights_description));
      break;
    case destination::websocket_upgrade:  // for the WebSocket session; here, a plain request
      response = detail_response(version, 426, "WebSocket upgrade required");
      response.set(http::field::upgrade, "websocket");
      break;
  }
  finish_response(plan, response, engine.metrics(), started, pass);
  co_return response;
}

http_response unreadable_request_response(const beast::error_code& error,
                                          const http_request_header& header,
                                          server_metrics& metrics) {
  int status = 400;
  std::string detail = "malformed HTTP request";
  if (error == http::error::body_limit)
    status = 413, detail = "request exceeds body limit";
  else if (error == beast::error::timeout)
    status = 408, detail = "request timed out";
  else if (error == http::error::header_limit)
    status = 431, detail = "request header too large";
  http_response response = detail_response(11, status, detail);
  response.keep_alive(false);
  const std::string request_id = request_id_for(header["X-Request-Id"]);
  set_request_id(response, request_id);
  metrics.count_request("unparsed", status);
  log_event(log_level::info, "request_rejected",
            {{"request_id", request_id}, {"status", status}, {"error", error.message()}});
  return response;
}

asio::awaitable<std::string> answer_websocket_message(std::string body, std::string request_id,
                                                      uint64_t sequence, std::string trace_id,
                                                      decision_engine& engine,
                                                      cancel_flag client_gone,
                                                      error_log_budget& failures) {
  const auto started = std::chrono::steady_clock::now();
  const decision_response decided =
      co_await decide(engine, std::move(body), request_id, std::move(client_gone));
  if (decided.status < 400 || failures.admit(decided.status))
    record_request(engine.metrics(), websocket_route, decided.status, request_id, started,
                   {.sequence = sequence, .trace_id = trace_id, .pass = decided.pass});
  else
    engine.metrics().count_request(websocket_route, decided.status);
  co_return websocket_reply_text(request_id, sequence, decided);
}

}  // namespace cua_s1
