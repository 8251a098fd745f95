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

#include "api/decision_answer.hpp"
#include "api/python_json.hpp"
#include "common/json_log.hpp"
#include "http/origin_policy.hpp"
#include "http/request_id.hpp"
#include "http/request_record.hpp"
#include "http/request_target.hpp"

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

// Media type of a Content-Type value without parameters, lower-cased.
std::string media_type(beast::string_view value) {
  std::string type(value.substr(0, value.find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  size_t first = type.find_first_not_of(" \t");
  type = first == std::string::npos ? std::string() : type.substr(first);
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type;
}

// One /v1/systemone body, on either route: 503 (Retry-After 1) while the engine is not ready,
// else the engine's answer. Readiness is checked again here because it may have changed while
// the body was read, and a WebSocket message has no headers of its own.
asio::awaitable<decision_response> decide(decision_engine& engine, std::string body,
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

http_response decision_http_response(unsigned version, decision_response decided) {
  http_response response = json_response(version, decided.status, std::move(decided.body));
  if (decided.retry_after_seconds > 0)
    response.set(http::field::retry_after, std::to_string(decided.retry_after_seconds));
  return response;
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
       {decision_route, websocket_route, "/health", "/health/ready", "/health/live", "/metrics"})
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
  } else if (path == websocket_route) {
    if (beast::websocket::is_upgrade(header))
      plan.to = destination::websocket_upgrade;
    else
      refuse(426, "WebSocket upgrade required").set(http::field::upgrade, "websocket");
  } else if (path == decision_route) {
    const auto content_type = header[http::field::content_type];
    if (header.method() != http::verb::post)
      refuse(405, "method not allowed").set(http::field::allow, "POST");
    else if (!content_type.empty() && media_type(content_type) != "application/json")
      refuse(415, "Content-Type must be application/json");
    else if (!engine.ready())
      refuse(503, engine.unavailable_detail()).set(http::field::retry_after, "1");
    else
      plan.to = destination::decision;
  } else if (path == "/health" || path == "/health/ready") {
    get_only(destination::health);
  } else if (path == "/health/live") {
    get_only(destination::liveness);
  } else if (path == "/metrics") {
    get_only(destination::metrics);
  } else {
    refuse(404, "unknown route");
  }
  plan.request_id = request_id_for(header["X-Request-Id"]);
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
      decision_response decided = co_await decide(engine, std::move(request.body()),
                                                  plan.request_id, std::move(client_gone));
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
    case destination::websocket_upgrade:  // for the WebSocket session; here, a plain request
      response = detail_response(version, 426, "WebSocket upgrade required");
      response.set(http::field::upgrade, "websocket");
      break;
  }
  response.set("X-Request-Id", plan.request_id);
  record_request(engine.metrics(), plan.route, static_cast<int>(response.result_int()),
                 plan.request_id, started, std::nullopt, pass);
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
  response.set("X-Request-Id", request_id);
  metrics.count_request("unparsed", status);
  log_event(log_level::info, "request_rejected",
            {{"request_id", request_id}, {"status", status}, {"error", error.message()}});
  return response;
}

asio::awaitable<std::string> answer_websocket_message(std::string body, std::string request_id,
                                                      uint64_t sequence, decision_engine& engine,
                                                      cancel_flag client_gone,
                                                      error_log_budget& failures) {
  const auto started = std::chrono::steady_clock::now();
  const decision_response decided =
      co_await decide(engine, std::move(body), request_id, std::move(client_gone));
  if (decided.status < 400 || failures.admit(decided.status))
    record_request(engine.metrics(), websocket_route, decided.status, request_id, started,
                   sequence, decided.pass);
  else
    engine.metrics().count_request(websocket_route, decided.status);
  co_return websocket_reply_text(request_id, sequence, decided);
}

}  // namespace cua_s1
