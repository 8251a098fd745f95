// WebSocket sessions: a reader that admits up to websocket_max_inflight messages at once, one
// coroutine per message awaiting the engine, and one writer sending the replies in the order
// they complete. Everything runs on the connection's strand.
#include "http/websocket_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>

#include "api/decision_answer.hpp"
#include "api/decision_request.hpp"
#include "api/python_json.hpp"
#include "common/json_log.hpp"
#include "http/active_request.hpp"
#include "http/request_id.hpp"

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using clock = std::chrono::steady_clock;

struct connection_state {
  explicit connection_state(beast::tcp_stream stream)
      : ws(std::move(stream)), reply_queued(ws.get_executor()) {}
  websocket::stream<beast::tcp_stream> ws;
  asio::steady_timer reply_queued;  // the reader waits on it while at the in-flight limit
  std::deque<std::string> replies;  // waiting for the writer
  size_t inflight = 0;
  bool writing = false;
  bool closed = false;  // no more writes
  cancel_flag client_gone = std::make_shared<std::atomic<bool>>(false);
};

std::string reply_text(const std::string& request_id, uint64_t sequence,
                       const decision_response& decided) {
  std::string out = "{\"request_id\":\"";
  append_json_string_body(out, request_id);
  out += "\",\"sequence\":" + std::to_string(sequence) +
         ",\"status\":" + std::to_string(decided.status) + ",\"body\":" + decided.body + "}";
  return out;
}

asio::awaitable<void> write_replies(std::shared_ptr<connection_state> c) {
  c->writing = true;
  beast::error_code ec;
  while (!c->replies.empty() && !c->closed) {
    const std::string text = std::move(c->replies.front());
    c->replies.pop_front();
    c->ws.text(true);
    co_await c->ws.async_write(asio::buffer(text), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) c->closed = true;
  }
  c->writing = false;
}

asio::awaitable<void> decide_message(std::shared_ptr<connection_state> c, decision_engine& engine,
                                     std::string body, uint64_t sequence,
                                     std::shared_ptr<std::atomic<size_t>> active) {
  active_request counted(*active);
  const std::string request_id = request_id_for({});
  const auto started = clock::now();
  decision_response decided;
  if (!engine.ready()) {
    decided.status = 503;
    decided.body = serialize_error({503, engine.draining() ? "server is shutting down, retry elsewhere"
                                                           : "server is starting, retry later"});
  } else {
    decided = co_await engine.async_decide(std::move(body), request_id, c->client_gone,
                                           asio::use_awaitable);
  }
  engine.metrics().count_request(websocket_route, decided.status);
  log_event(decided.status >= 500 ? log_level::warning : log_level::info, "request",
            {{"request_id", request_id}, {"route", websocket_route}, {"status", decided.status},
             {"sequence", sequence},
             {"ms", std::chrono::duration<double, std::milli>(clock::now() - started).count()}});
  c->replies.push_back(reply_text(request_id, sequence, decided));
  --c->inflight;
  c->reply_queued.cancel();
  if (!c->writing) co_await write_replies(c);
}

}  // namespace

asio::awaitable<void> run_websocket_session(
    beast::tcp_stream stream, beast::http::request<beast::http::string_body> upgrade,
    decision_engine& engine, std::shared_ptr<std::atomic<size_t>> active) {
  stream.expires_never();  // the WebSocket stream keeps its own timeouts
  auto c = std::make_shared<connection_state>(std::move(stream));
  c->ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  c->ws.read_message_max(max_body_bytes);
  beast::error_code ec;
  co_await c->ws.async_accept(upgrade, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  uint64_t sequence = 0;
  beast::flat_buffer buffer;
  while (true) {
    while (c->inflight >= websocket_max_inflight) {  // backpressure: stop reading for a while
      c->reply_queued.expires_at(clock::time_point::max());
      co_await c->reply_queued.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    buffer.clear();
    co_await c->ws.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
    // A close from the client, a reset, or a protocol error (Beast closes with its code, e.g.
    // 1009 for a message over the limit).
    if (ec) break;
    if (!c->ws.got_text()) {
      c->closed = true;
      co_await c->ws.async_close({websocket::close_code::unknown_data, "text messages only"},
                                 asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    ++c->inflight;
    asio::co_spawn(c->ws.get_executor(),
                   decide_message(c, engine, beast::buffers_to_string(buffer.data()), sequence++, active),
                   asio::detached);
  }
  c->client_gone->store(true);  // its work not started yet is dropped
  c->closed = true;
}

}  // namespace cua_s1
