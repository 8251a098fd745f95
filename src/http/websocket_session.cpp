// The transport of WebSocket sessions: a reader that admits up to websocket_max_inflight messages
// at once, one coroutine per message awaiting its reply (src/http/routes), and one writer sending
// the replies in the order they complete. Everything runs on the connection's strand.
#include "http/websocket_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <optional>

#include "api/decision_request.hpp"
#include "http/active_request.hpp"
#include "http/request_id.hpp"
#include "http/routes.hpp"

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using clock = std::chrono::steady_clock;

// A reply waiting for the writer; the message stays counted as active until it is written.
struct pending_reply {
  std::string text;
  std::unique_ptr<active_request> counted;
};

struct connection_state {
  explicit connection_state(beast::tcp_stream stream)
      : ws(std::move(stream)), reply_queued(ws.get_executor()) {}
  websocket::stream<beast::tcp_stream> ws;
  asio::steady_timer reply_queued;  // the reader waits on it while at the in-flight limit
  std::deque<pending_reply> replies;  // waiting for the writer
  size_t inflight = 0;
  bool writing = false;
  bool closed = false;  // no more writes
  // A close the writer sends: at once (a protocol error) or after the last reply (drain).
  std::optional<websocket::close_reason> closing;
  bool close_now = false;
  std::function<void()> on_close_sent;  // takes the connection off the registry
  cancel_flag client_gone = std::make_shared<std::atomic<bool>>(false);
};

// The connection's only writer: replies in completion order, then the close frame when one is
// due. Runs on the connection's strand; start it through wake_writer.
asio::awaitable<void> write_replies(std::shared_ptr<connection_state> c) {
  beast::error_code ec;
  while (!c->closed) {
    if (c->closing && (c->close_now || (c->replies.empty() && c->inflight == 0))) {
      c->closed = true;
      c->replies.clear();
      // Runs on this strand after the co_await below has started the close, whose first step
      // writes the frame: from then on the drain need not wait for this connection.
      if (c->on_close_sent) asio::post(c->ws.get_executor(), std::move(c->on_close_sent));
      co_await c->ws.async_close(*c->closing, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    if (c->replies.empty()) break;
    pending_reply reply = std::move(c->replies.front());
    c->replies.pop_front();
    c->ws.text(true);
    co_await c->ws.async_write(asio::buffer(reply.text),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) c->closed = true;
  }
  c->writing = false;
}

void wake_writer(const std::shared_ptr<connection_state>& c) {
  if (c->writing) return;
  c->writing = true;
  asio::co_spawn(c->ws.get_executor(), write_replies(c), asio::detached);
}

asio::awaitable<void> decide_message(std::shared_ptr<connection_state> c, decision_engine& engine,
                                     std::string body, uint64_t sequence, std::string request_id,
                                     std::unique_ptr<active_request> counted) {
  std::string reply = co_await answer_websocket_message(std::move(body), std::move(request_id),
                                                        sequence, engine, c->client_gone);
  c->replies.push_back({std::move(reply), std::move(counted)});
  --c->inflight;
  c->reply_queued.cancel();
  wake_writer(c);
}

}  // namespace

uint64_t websocket_registry::add(closer close) {
  std::lock_guard lock(mutex_);
  const uint64_t id = next_id_++;
  if (closing_) close();
  open_.emplace(id, std::move(close));
  return id;
}

void websocket_registry::remove(uint64_t id) {
  std::lock_guard lock(mutex_);
  open_.erase(id);
}

void websocket_registry::close_all() {
  std::lock_guard lock(mutex_);
  closing_ = true;
  for (auto& [id, close] : open_) close();
}

size_t websocket_registry::open() const {
  std::lock_guard lock(mutex_);
  return open_.size();
}

asio::awaitable<void> run_websocket_session(
    beast::tcp_stream stream, beast::http::request<beast::http::string_body> upgrade,
    decision_engine& engine, std::shared_ptr<std::atomic<size_t>> active,
    std::shared_ptr<websocket_registry> registry) {
  stream.expires_never();  // the WebSocket stream keeps its own timeouts
  auto c = std::make_shared<connection_state>(std::move(stream));
  const std::string given_id(upgrade["X-Request-Id"]);
  const std::string upgrade_id = given_id.empty() ? std::string() : request_id_for(given_id);
  c->ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  c->ws.set_option(websocket::stream_base::decorator(
      [id = upgrade_id.empty() ? request_id_for({}) : upgrade_id](websocket::response_type& r) {
        r.set("X-Request-Id", id);
      }));
  c->ws.read_message_max(max_body_bytes);
  beast::error_code ec;
  co_await c->ws.async_accept(upgrade, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;

  // A drain asks the writer to close with 1001 once every reply is out.
  std::weak_ptr<connection_state> weak = c;
  const uint64_t registered = registry->add([weak, executor = c->ws.get_executor()] {
    asio::post(executor, [weak] {
      auto c = weak.lock();
      if (!c || c->closing) return;
      c->closing = websocket::close_reason(websocket::close_code::going_away,
                                           "server is shutting down");
      wake_writer(c);
    });
  });
  c->on_close_sent = [registry, registered] { registry->remove(registered); };

  uint64_t sequence = 0;
  beast::flat_buffer buffer;
  while (true) {
    while (c->inflight >= websocket_max_inflight) {  // backpressure: stop reading for a while
      c->reply_queued.expires_at(clock::time_point::max());
      co_await c->reply_queued.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    buffer.clear();
    co_await c->ws.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
    // A close from the client (or the end of our own close), a reset, or a protocol error
    // (Beast closes with its code, e.g. 1009 for a message over the limit).
    if (ec) break;
    if (!c->ws.got_text()) {
      if (!c->closing) c->closing = websocket::close_reason(websocket::close_code::unknown_data,
                                                            "text messages only");
      c->close_now = true;
      wake_writer(c);
      break;
    }
    ++c->inflight;
    const uint64_t this_sequence = sequence++;
    asio::co_spawn(c->ws.get_executor(),
                   decide_message(c, engine, beast::buffers_to_string(buffer.data()),
                                  this_sequence, message_request_id(upgrade_id, this_sequence),
                                  std::make_unique<active_request>(*active)),
                   asio::detached);
  }
  c->client_gone->store(true);  // its work not started yet is dropped
  if (!c->writing) c->closed = true;  // else the writer finishes (a close it is sending)
  registry->remove(registered);
}

}  // namespace cua_s1
