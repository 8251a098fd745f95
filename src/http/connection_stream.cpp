// The steps of a session that differ between TCP and TLS (see connection_stream.hpp).
#include "http/connection_stream.hpp"

#include <array>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>

// GCC 12's false positive on Asio coroutine frames (PR middle-end/109224; see routes.cpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace cua_s1 {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// Beast reads at most 64 KiB a call; a TLS record holds at most 16 KiB.
constexpr size_t first_read_bytes = 64 * 1024;

asio::awaitable<void> wait_for_request(plain_stream& stream, beast::flat_buffer&,
                                       beast::error_code& ec) {
  co_await stream.socket().async_wait(tcp::socket::wait_read,
                                      asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> wait_for_request(tls_stream& stream, beast::flat_buffer& buffer,
                                       beast::error_code& ec) {
  const size_t got = co_await stream.async_read_some(buffer.prepare(first_read_bytes),
                                                     asio::redirect_error(asio::use_awaitable, ec));
  buffer.commit(got);
}

bool connection_ended(const beast::error_code& ec) {
  return ec == beast::http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated;
}

asio::awaitable<void> lingering_close(plain_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  stream.expires_after(std::chrono::seconds(2));
  std::array<char, 64 * 1024> discard;
  while (!ec)
    co_await stream.async_read_some(asio::buffer(discard),
                                    asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> lingering_close(tls_stream& stream) {
  beast::error_code ec;
  plain_stream& tcp_layer = beast::get_lowest_layer(stream);
  tcp_layer.expires_after(close_notify_wait);
  // Sends our close_notify, then reads until the client's. Request data the client still sends
  // ends it with an error; the TCP close below then discards it.
  co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  if (ec == beast::error::timeout) co_return;  // the timeout has closed the socket
  co_await lingering_close(tcp_layer);
}

}  // namespace cua_s1
