// The disconnect watch of a waiting decision (see disconnect_watch.hpp).
#include "http/disconnect_watch.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <string_view>

namespace cua_s1 {

struct disconnect_watch::state {
  cancel_flag cancelled = std::make_shared<std::atomic<bool>>(false);
  bool watching = true;
  bool stream_broken = false;
};

namespace {

using tcp = boost::asio::ip::tcp;
using watch_state = std::shared_ptr<disconnect_watch::state>;

constexpr std::string_view interim_answer = "HTTP/1.1 100 Continue\r\n\r\n";

// The peer reset the connection (or TCP gave up on it).
bool connection_reset(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error != 0) return true;
  tcp_info info{};
  length = sizeof info;
  return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 && info.tcpi_state == TCP_CLOSE;
}

// After the end of the client's input only an error can say more (the socket stays readable).
// Urgent data also wakes this wait: the watch then ends without cancelling.
void watch_for_reset(tcp::socket& socket, watch_state s) {
  socket.async_wait(tcp::socket::wait_error, [&socket, s](const boost::system::error_code& ec) {
    if (ec || !s->watching) return;
    if (connection_reset(socket.native_handle())) s->cancelled->store(true);
  });
}

// The client sent FIN: gone, or half-closed and still reading (see disconnect_watch.hpp).
void on_end_of_input(tcp::socket& socket, const watch_state& s, bool may_send_interim) {
  if (!may_send_interim) return watch_for_reset(socket, s);
  const ssize_t sent = ::send(socket.native_handle(), interim_answer.data(), interim_answer.size(),
                              MSG_DONTWAIT | MSG_NOSIGNAL);
  if (sent == static_cast<ssize_t>(interim_answer.size())) return watch_for_reset(socket, s);
  if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))  // nothing written: the client
    return watch_for_reset(socket, s);                        // has not read our last answer
  if (sent > 0) s->stream_broken = true;
  s->cancelled->store(true);  // the write failed (reset, broken pipe) or broke the stream
}

}  // namespace

disconnect_watch::disconnect_watch(plain_stream& stream, boost::beast::flat_buffer&,
                                   bool may_send_interim)
    : state_(std::make_shared<state>()), stream_(stream) {
  tcp::socket& socket = stream.socket();
  socket.async_wait(tcp::socket::wait_read, [&socket, s = state_, may_send_interim](
                                                const boost::system::error_code& ec) {
    if (ec || !s->watching) return;  // stopped: the answer is ready
    char byte;
    const ssize_t got = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (got == 0)
      on_end_of_input(socket, s, may_send_interim);
    else if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      s->cancelled->store(true);  // reset
  });
}

const cancel_flag& disconnect_watch::flag() const { return state_->cancelled; }

bool disconnect_watch::stream_broken() const { return state_->stream_broken; }

boost::asio::awaitable<void> disconnect_watch::stop() {
  state_->watching = false;
  boost::system::error_code ignored;
  stream_.socket().cancel(ignored);
  co_return;
}

struct tls_disconnect_watch::state {
  explicit state(const tls_stream::executor_type& executor) : read_over(executor) {}
  cancel_flag cancelled = std::make_shared<std::atomic<bool>>(false);
  bool stopping = false;
  bool reading = true;
  boost::asio::steady_timer read_over;  // cancelled when the read is over
};

namespace {

// Beast reads at most 64 KiB a call; a TLS record holds at most 16 KiB.
constexpr size_t watch_read_bytes = 64 * 1024;

boost::asio::awaitable<void> watch_tls_input(tls_stream& stream, boost::beast::flat_buffer& buffer,
                                             std::shared_ptr<tls_disconnect_watch::state> s) {
  // stop() may have come before this coroutine started. Bytes already buffered (pipelined
  // requests) count against what the watch reads: through it the buffer never grows past
  // watch_read_bytes, however many requests a client pipelines.
  if (!s->stopping && buffer.size() < watch_read_bytes) {
    boost::system::error_code ec;
    const size_t got = co_await stream.async_read_some(
        buffer.prepare(watch_read_bytes - buffer.size()),
        boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    buffer.commit(got);
    if (ec && !s->stopping) s->cancelled->store(true);  // its end of input, or a reset
  }
  s->reading = false;
  s->read_over.cancel();
}

}  // namespace

tls_disconnect_watch::tls_disconnect_watch(tls_stream& stream, boost::beast::flat_buffer& buffer,
                                           bool)
    : state_(std::make_shared<state>(stream.get_executor())), stream_(stream) {
  boost::asio::co_spawn(stream.get_executor(), watch_tls_input(stream, buffer, state_),
                        boost::asio::detached);
}

const cancel_flag& tls_disconnect_watch::flag() const { return state_->cancelled; }

boost::asio::awaitable<void> tls_disconnect_watch::stop() {
  state_->stopping = true;
  boost::system::error_code ec;
  boost::beast::get_lowest_layer(stream_).socket().cancel(ec);
  while (state_->reading) {
    state_->read_over.expires_at(std::chrono::steady_clock::time_point::max());
    co_await state_->read_over.async_wait(
        boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
}

}  // namespace cua_s1
