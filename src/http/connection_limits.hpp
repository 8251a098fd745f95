// The connections the server holds at once (--max-connections) and what the listener does when
// it cannot take another one: a connection beyond the limit is answered 503 and closed (at most
// max_refusals_in_flight at once; more are closed unanswered); an accept that fails for lack of
// descriptors or memory is retried after a pause, not at once.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>

#include "common/log_throttle.hpp"
#include "common/shared_capacity.hpp"
#include "http/routes.hpp"

namespace cua_s1 {

// Open connections (HTTP and WebSocket alike), each held (one unit of a shared_capacity) from
// its accept until it is closed.
using connection_counter = shared_capacity;

// Connections beyond the limit being answered at once; one more is closed unanswered.
inline constexpr size_t max_refusals_in_flight = 64;

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
