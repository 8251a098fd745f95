// The disconnect watch of a waiting decision (see disconnect_watch.hpp).
#include "http/disconnect_watch.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

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

disconnect_watch::disconnect_watch(tcp::socket& socket, bool may_send_interim)
    : state_(std::make_shared<state>()) {
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

void disconnect_watch::stop(tcp::socket& socket) {
  state_->watching = false;
  boost::system::error_code ignored;
  socket.cancel(ignored);
}

}  // namespace cua_s1
