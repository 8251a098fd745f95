// The transport of WebSocket sessions: a reader that admits a message while the connection has
// room (websocket_max_inflight messages unanswered, websocket_max_unwritten_bytes of replies), one
// coroutine per message awaiting its reply (src/http/routes), and one writer sending the replies
// in the order they complete, under a watchdog that gives up a client that does not read.
// Everything runs on the connection's strand. The same code serves plain and TLS streams.
#include "http/websocket_session.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>

#include "api/decision_request.hpp"
#include "common/json_log.hpp"
#include "http/active_request.hpp"
#include "http/error_log_budget.hpp"
#include "http/request_id.hpp"
#include "http/request_record.hpp"
#include "http/routes.hpp"
#include "http/trace_context.hpp"
#include "http/websocket_handshake.hpp"

namespace cua_s1 {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using clock = std::chrono::steady_clock;

// Beast sends a message in frames of its write buffer, set to this size (its default). Writing
// one frame a call lets the watchdog see each frame's progress, and a close queued behind a
// stalled frame is sent right after it, never between two frames of one call.
constexpr size_t write_piece_bytes = 4096;

// How long a close frame queued behind a stalled write may wait for that write before the TCP
// connection is dropped.
constexpr std::chrono::seconds close_frame_grace{2};

// A reply waiting for the writer; the message stays counted as active until it is written.
struct pending_reply {
  std::string text;
  std::unique_ptr<active_request> counted;
};

template <class Stream>
struct connection_state {
  connection_state(Stream stream, std::string id, std::string trace, clock::duration timeout)
      : ws(std::move(stream)),
        connection_id(std::move(id)),
        trace_id(std::move(trace)),
        write_timeout(timeout),
        room_freed(ws.get_executor()),
        write_watchdog(ws.get_executor()),
        failures(connection_id, websocket_route) {}
  websocket::stream<Stream> ws;
  const std::string connection_id;  // the upgrade's X-Request-Id, or a new one
  const std::string trace_id;  // of the upgrade's traceparent, logged with each message; or empty
  const clock::duration write_timeout;
  asio::steady_timer room_freed;      // the reader waits on it while the connection is full
  asio::steady_timer write_watchdog;  // runs out when the write under way makes no progress
  std::deque<pending_reply> replies;  // waiting for the writer
  size_t deciding = 0;           // messages read whose reply is not ready yet
  size_t unwritten_replies = 0;  // replies queued or being written
  size_t unwritten_bytes = 0;    // and their size
  bool writing = false;
  bool closed = false;   // no more writes
  bool gave_up = false;  // its replies stalled: a close with 1008, else the connection dropped
  // A close the writer sends: at once (a protocol error) or after the last reply (drain).
  std::optional<websocket::close_reason> closing;
  bool close_now = false;
  std::function<void()> on_close_sent;  // takes the connection off the registry
  cancel_flag client_gone = std::make_shared<std::atomic<bool>>(false);
  error_log_budget failures;  // the log lines of its failed messages
};

// Whether the reader may admit another message.
template <class Stream>
bool has_room(const connection_state<Stream>& c) {
  return c.deciding + c.unwritten_replies < websocket_max_inflight &&
         c.unwritten_bytes < websocket_max_unwritten_bytes;
}

// A reply of `bytes` has been written, or never will be: the reader may go on.
template <class Stream>
void reply_done(connection_state<Stream>& c, size_t bytes) {
  --c.unwritten_replies;
  c.unwritten_bytes -= bytes;
  c.room_freed.cancel();
}

// No more writes: the replies not written yet are dropped and the connection leaves the
// registry (the drain need not wait for it). The reader, if waiting, stops.
template <class Stream>
void stop_writing(const std::shared_ptr<connection_state<Stream>>& c) {
  c->closed = true;
  for (; !c->replies.empty(); c->replies.pop_front())
    reply_done(*c, c->replies.front().text.size());
  // Runs on this strand after the caller has started its close, whose first step writes the
  // frame.
  if (c->on_close_sent) asio::post(c->ws.get_executor(), std::move(c->on_close_sent));
  c->room_freed.cancel();
}

template <class Stream>
void on_write_stalled(const std::shared_ptr<connection_state<Stream>>& c);

// Gives the write about to start `limit` to complete, else on_write_stalled.
template <class Stream>
void watch_write(const std::shared_ptr<connection_state<Stream>>& c, clock::duration limit) {
  c->write_watchdog.expires_after(limit);
  c->write_watchdog.async_wait(
      [weak = std::weak_ptr<connection_state<Stream>>(c)](const beast::error_code& ec) {
        auto c = weak.lock();
        // Also ignores an expiry that raced with the write's completion: re-armed or stopped
        // (expiry at max) since.
        if (ec || !c || clock::now() < c->write_watchdog.expiry()) return;
        on_write_stalled(c);
      });
}

template <class Stream>
void stop_watching_write(connection_state<Stream>& c) {
  c.write_watchdog.expires_at(clock::time_point::max());
}

// The write under way has made no progress for the write timeout: the client does not read its
// replies. The connection is given up: its replies are dropped, its work not started is
// cancelled, and a close with 1008 is queued behind the stalled write. If that write still
// makes no progress within close_frame_grace, the TCP connection is dropped.
template <class Stream>
void on_write_stalled(const std::shared_ptr<connection_state<Stream>>& c) {
  if (c->gave_up) {
    beast::get_lowest_layer(c->ws).close();  // every pending operation fails
    return;
  }
  const auto timeout = std::chrono::duration_cast<std::chrono::seconds>(c->write_timeout);
  log_event(log_level::warning, "websocket_write_stalled",
            {{"request_id", c->connection_id},
             {"unwritten_replies", c->unwritten_replies},
             {"timeout_s", static_cast<int64_t>(timeout.count())}});
  c->gave_up = true;
  c->client_gone->store(true);
  stop_writing(c);
  c->ws.async_close(
      websocket::close_reason(websocket::close_code::policy_error, "replies not read in time"),
      [c](const beast::error_code&) {});
  watch_write(c, close_frame_grace);
}

// Writes `text` as one text message, a frame at a time, each under the watchdog. Stops early
// once the connection is given up (its close frame goes next).
template <class Stream>
asio::awaitable<beast::error_code> write_message(std::shared_ptr<connection_state<Stream>> c,
                                                 const std::string& text) {
  beast::error_code ec;
  c->ws.text(true);
  size_t offset = 0;
  do {
    const size_t piece = std::min(write_piece_bytes, text.size() - offset);
    const bool last = offset + piece == text.size();
    watch_write(c, c->write_timeout);
    co_await c->ws.async_write_some(last, asio::buffer(text.data() + offset, piece),
                                    asio::redirect_error(asio::use_awaitable, ec));
    stop_watching_write(*c);  // also the grace of a close queued meanwhile: it is on its way
    offset += piece;
  } while (!ec && !c->gave_up && offset < text.size());
  co_return ec;
}

// The connection's only writer: replies in completion order, then the close frame when one is
// due. Runs on the connection's strand; start it through wake_writer.
template <class Stream>
asio::awaitable<void> write_replies(std::shared_ptr<connection_state<Stream>> c) {
  beast::error_code ec;
  while (!c->closed) {
    if (c->closing && (c->close_now || (c->replies.empty() && c->deciding == 0))) {
      const websocket::close_reason reason = *c->closing;
      stop_writing(c);
      // Beast's handshake timeout (the write timeout) bounds the close frame and the answer.
      co_await c->ws.async_close(reason, asio::redirect_error(asio::use_awaitable, ec));
      break;
    }
    if (c->replies.empty()) break;
    pending_reply reply = std::move(c->replies.front());
    c->replies.pop_front();
    ec = co_await write_message(c, reply.text);
    reply_done(*c, reply.text.size());
    if (ec && !c->closed) stop_writing(c);
  }
  c->writing = false;
}

template <class Stream>
void wake_writer(const std::shared_ptr<connection_state<Stream>>& c) {
  if (c->writing) return;
  c->writing = true;
  asio::co_spawn(c->ws.get_executor(), write_replies(c), asio::detached);
}

template <class Stream>
asio::awaitable<void> decide_message(std::shared_ptr<connection_state<Stream>> c,
                                     decision_engine& engine, std::string body,
                                     uint64_t sequence, std::string request_id,
                                     std::unique_ptr<active_request> counted) {
  std::string reply = co_await answer_websocket_message(std::move(body), std::move(request_id),
                                                        sequence, std::string(c->trace_id),
                                                        engine, c->client_gone,
                                                        c->failures);
  --c->deciding;
  if (c->closed) {  // nobody will write it
    c->room_freed.cancel();
    co_return;
  }
  ++c->unwritten_replies;
  c->unwritten_bytes += reply.size();
  c->replies.push_back({std::move(reply), std::move(counted)});
  wake_writer(c);
}

// Answers a handshake Beast would refuse as our JSON error (counted and logged like any request
// on the route); false when the handshake can proceed.
template <class Stream>
asio::awaitable<bool> refused_handshake(Stream& stream, const http_request& upgrade,
                                        const std::string& connection_id, decision_engine& engine,
                                        clock::duration write_timeout) {
  const auto started = clock::now();
  std::optional<http_response> refusal = websocket_handshake_refusal(upgrade, connection_id);
  if (!refusal) co_return false;
  record_request(engine.metrics(), websocket_route, static_cast<int>(refusal->result_int()),
                 connection_id, started);
  beast::get_lowest_layer(stream).expires_after(write_timeout);
  beast::error_code ec;
  co_await beast::http::async_write(stream, *refusal,
                                    asio::redirect_error(asio::use_awaitable, ec));
  co_return true;
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

namespace {

// run_websocket_session over either stream.
template <class Stream>
asio::awaitable<void> serve_websocket(Stream stream, http_request upgrade, decision_engine& engine,
                                      std::shared_ptr<std::atomic<size_t>> active,
                                      std::shared_ptr<websocket_registry> registry,
                                      clock::duration write_timeout) {
  const std::string given_id(upgrade["X-Request-Id"]);
  const std::string upgrade_id = given_id.empty() ? std::string() : request_id_for(given_id);
  const std::string connection_id = upgrade_id.empty() ? request_id_for({}) : upgrade_id;
  if (co_await refused_handshake(stream, upgrade, connection_id, engine, write_timeout)) co_return;
  beast::get_lowest_layer(stream).expires_never();  // the WebSocket stream keeps its own timeouts
  const std::string traceparent = valid_traceparent(upgrade["traceparent"]);
  auto c = std::make_shared<connection_state<Stream>>(
      std::move(stream), connection_id, std::string(trace_id_of(traceparent)), write_timeout);
  auto timeouts = websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.handshake_timeout = write_timeout;  // our 101 answer; our close frame and its answer
  c->ws.set_option(timeouts);
  c->ws.set_option(websocket::stream_base::decorator(
      [connection_id, traceparent](websocket::response_type& r) {
        r.set("X-Request-Id", connection_id);
        r.set("x-typesafe-request-id", connection_id);
        if (!traceparent.empty()) r.set("traceparent", traceparent);
      }));
  c->ws.read_message_max(max_body_bytes);
  c->ws.write_buffer_bytes(write_piece_bytes);
  beast::error_code ec;
  co_await c->ws.async_accept(upgrade, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;

  // A drain asks the writer to close with 1001 once every reply is out.
  std::weak_ptr<connection_state<Stream>> weak = c;
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
    // Backpressure: nothing more is read while the connection is full, nor once a close is due.
    while (!c->closed && (c->closing || !has_room(*c))) {
      c->room_freed.expires_at(clock::time_point::max());
      co_await c->room_freed.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (c->closed) break;
    buffer.clear();
    co_await c->ws.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
    // A close from the client (or the end of our own close), a reset, or a protocol error
    // (Beast closes with its code, e.g. 1009 for a message over the limit); or given up.
    if (ec || c->closed) break;
    if (!c->ws.got_text()) {
      if (!c->closing) c->closing = websocket::close_reason(websocket::close_code::unknown_data,
                                                            "text messages only");
      c->close_now = true;
      wake_writer(c);
      break;
    }
    ++c->deciding;
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
  c->failures.flush();
}

}  // namespace

asio::awaitable<void> run_websocket_session(plain_stream stream, http_request upgrade,
                                            decision_engine& engine,
                                            std::shared_ptr<std::atomic<size_t>> active,
                                            std::shared_ptr<websocket_registry> registry,
                                            clock::duration write_timeout) {
  return serve_websocket(std::move(stream), std::move(upgrade), engine, std::move(active),
                         std::move(registry), write_timeout);
}

asio::awaitable<void> run_websocket_session(tls_stream stream, http_request upgrade,
                                            decision_engine& engine,
                                            std::shared_ptr<std::atomic<size_t>> active,
                                            std::shared_ptr<websocket_registry> registry,
                                            clock::duration write_timeout) {
  return serve_websocket(std::move(stream), std::move(upgrade), engine, std::move(active),
                         std::move(registry), write_timeout);
}

}  // namespace cua_s1
