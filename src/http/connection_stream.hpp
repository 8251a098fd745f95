// The two streams an HTTP connection runs over, plain TCP and TLS over TCP, and the steps of a
// session that differ between them: waiting for the first bytes of a request, telling that the
// client ended the connection, and closing it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>

namespace cua_s1 {

using plain_stream = boost::beast::tcp_stream;
using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// How long a TLS close waits for the client's close_notify (its answer to ours).
inline constexpr std::chrono::seconds close_notify_wait{2};

// Waits until the client sends the first bytes of its next request, so that an idle keep-alive
// connection is not a request yet. Over TCP it waits for the socket to be readable and reads
// nothing; over TLS, where bytes on the socket may be no request data (or request data may
// already sit decrypted in the TLS layer), it reads the first decrypted bytes into `buffer`.
boost::asio::awaitable<void> wait_for_request(plain_stream& stream,
                                              boost::beast::flat_buffer& buffer,
                                              boost::beast::error_code& ec);
boost::asio::awaitable<void> wait_for_request(tls_stream& stream, boost::beast::flat_buffer& buffer,
                                              boost::beast::error_code& ec);

// Whether a read failed because the client ended the connection: its end of input (over TLS
// with or without close_notify) or a reset.
bool connection_ended(const boost::beast::error_code& ec);

// Ends our side, then reads and discards what the client still sends (bounded in time), so a
// client that is still writing a refused body (413, 400) reads our answer instead of a reset.
// Over TLS our close_notify goes first (its answer awaited at most close_notify_wait), then the
// TCP connection is closed the same way.
boost::asio::awaitable<void> lingering_close(plain_stream& stream);
boost::asio::awaitable<void> lingering_close(tls_stream& stream);

}  // namespace cua_s1
