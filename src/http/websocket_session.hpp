// The WebSocket route /v1/systemone/ws: each text message is one /v1/systemone body; each reply
// is {"request_id":..., "sequence":N, "status":S, "body":<the HTTP body, verbatim>}.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "actors/decision_engine.hpp"
#include "http/connection_stream.hpp"
#include "http/routes.hpp"

namespace cua_s1 {

// Messages of one connection read and not yet answered (being decided, or their reply not yet
// written to the socket). The next message is read only when one is answered and while less
// than websocket_max_unwritten_bytes of replies wait to be written, so a client that sends
// faster than it reads is held back by TCP, and one that does not read stops being read.
inline constexpr size_t websocket_max_inflight = 4;
inline constexpr size_t websocket_max_unwritten_bytes = 1024 * 1024;

// The open WebSocket connections, so that a drain can ask each to close with 1001 once its
// replies are written. Thread-safe.
class websocket_registry {
 public:
  using closer = std::function<void()>;  // posts the close request to its connection's strand
  // A connection opened after close_all() is asked to close at once.
  uint64_t add(closer close);
  // The connection has sent its close frame or has gone.
  void remove(uint64_t id);
  void close_all();
  // Connections that have not sent their close frame yet (the drain waits for 0).
  size_t open() const;

 private:
  mutable std::mutex mutex_;
  std::map<uint64_t, closer> open_;
  uint64_t next_id_ = 0;
  bool closing_ = false;
};

// Completes the upgrade of `upgrade` and serves the connection until it closes. A handshake
// Beast would refuse is answered {"detail": ...} (400, or 426 for another protocol version). A
// binary message closes it with 1003, a message over 8 MiB with 1009; a client that goes away
// cancels its work not started yet. A write that makes no progress for `write_timeout` (the
// client does not read its replies) gives the connection up: close 1008, or the TCP connection
// dropped when that close frame cannot be written either. `active` counts messages from their
// arrival until their reply is written or dropped (drain). Each message's request id is the
// upgrade's X-Request-Id (when usable) with "/<sequence>" appended, else a new one; the upgrade
// answer echoes it (also as x-typesafe-request-id) and a valid traceparent, whose trace id each
// message's log line carries; the log lines of failed messages are rate-limited per connection
// (error_log_budget). The API key, if any, was checked on the upgrade's headers (routes).
// Over plain TCP or TLS (wss://) alike.
boost::asio::awaitable<void> run_websocket_session(
    plain_stream stream, http_request upgrade, decision_engine& engine,
    std::shared_ptr<std::atomic<size_t>> active, std::shared_ptr<websocket_registry> registry,
    std::chrono::steady_clock::duration write_timeout);
boost::asio::awaitable<void> run_websocket_session(
    tls_stream stream, http_request upgrade, decision_engine& engine,
    std::shared_ptr<std::atomic<size_t>> active, std::shared_ptr<websocket_registry> registry,
    std::chrono::steady_clock::duration write_timeout);

}  // namespace cua_s1
