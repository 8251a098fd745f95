// The WebSocket route /v1/systemone/ws: each text message is one /v1/systemone body; each reply
// is {"request_id":..., "sequence":N, "status":S, "body":<the HTTP body, verbatim>}.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <atomic>
#include <cstddef>
#include <memory>

#include "actors/decision_engine.hpp"

namespace cua_s1 {

inline constexpr const char* websocket_route = "/v1/systemone/ws";
// Messages of one connection decided at once; the next one is read when one is answered, so
// a client that sends faster is held back by TCP (backpressure), never dropped.
inline constexpr size_t websocket_max_inflight = 4;

// Completes the upgrade of `upgrade` and serves the connection until it closes. A binary
// message closes it with 1003, a message over 8 MiB with 1009; a client that goes away
// cancels its work not started yet. `active` counts messages being decided (drain).
boost::asio::awaitable<void> run_websocket_session(
    boost::beast::tcp_stream stream, boost::beast::http::request<boost::beast::http::string_body> upgrade,
    decision_engine& engine, std::shared_ptr<std::atomic<size_t>> active);

}  // namespace cua_s1
