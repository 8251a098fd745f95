// The connections the server holds at once (--max-connections) and what the listener does when
// it cannot take another one: a connection beyond the limit is answered 503 and closed; an
// accept that fails for lack of descriptors or memory is retried after a pause, not at once.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

#include "common/log_throttle.hpp"
#include "http/routes.hpp"

namespace cua_s1 {

// Open connections (HTTP and WebSocket alike), each counted from its accept until it is
// closed. A copy shares the count. Thread-safe.
class connection_counter {
 public:
  explicit connection_counter(size_t limit);

  // One counted connection; the count drops when it is destroyed.
  class slot {
   public:
    slot(slot&& other) noexcept : state_(std::move(other.state_)) {}
    slot& operator=(slot&&) = delete;
    slot(const slot&) = delete;
    ~slot();

   private:
    friend class connection_counter;
    struct state;
    explicit slot(std::shared_ptr<state> state) : state_(std::move(state)) {}
    std::shared_ptr<state> state_;
  };

  // A slot, or nothing when `limit` connections are open.
  std::optional<slot> try_open();
  size_t limit() const;

 private:
  std::shared_ptr<slot::state> state_;
};

// The answer to a connection beyond the limit: 503 {"detail": ...} with Retry-After: 1 and
// Connection: close.
http_response too_many_connections_response();

// Logs a connection refused at the limit ("connection_refused", rate-limited by `throttle`).
void log_connection_refused(const connection_counter& connections, log_throttle& throttle);

// After a failed accept: logs "accept_failed" (rate-limited by `throttle`) and, when the process
// is out of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), waits accept_backoff
// before the next accept, which would fail again at once.
boost::asio::awaitable<void> after_accept_error(const boost::system::error_code& error,
                                                log_throttle& throttle);
inline constexpr std::chrono::milliseconds accept_backoff{50};

}  // namespace cua_s1
