// Notices, while a decision waits, a client that has gone away, so that its work not started yet
// is dropped (answered 499 to nobody). A client that only half-closes (shutdown(SHUT_WR) after its
// request) has not gone: it still reads, and gets its real answer.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <memory>

#include "actors/decision_engine.hpp"
#include "http/connection_stream.hpp"

namespace cua_s1 {

// Over TCP. A reset or error on the socket means gone. The end of the client's input (FIN)
// cannot tell a close from a half-close, so on an HTTP/1.1 connection the watch then writes an
// interim "100 Continue" (which every HTTP/1.1 client must accept before the final answer): a
// closed socket answers it with a reset, a half-closed one reads it. On HTTP/1.0, which must not
// get interim answers, only a reset counts. Bytes of a pipelined next request end the watch.
// It only peeks at the socket. Runs on the session's strand; stop() before the stream is used
// again.
class disconnect_watch {
 public:
  // `may_send_interim`: the request is HTTP/1.1.
  disconnect_watch(plain_stream& stream, boost::beast::flat_buffer& buffer, bool may_send_interim);

  // Set once the client is gone.
  const cancel_flag& flag() const;
  // The interim answer was only partly written (a client that neither reads nor sends): the
  // connection can carry no answer and must close.
  bool stream_broken() const;
  boost::asio::awaitable<void> stop();

  struct state;

 private:
  std::shared_ptr<state> state_;
  plain_stream& stream_;
};

// Over TLS, where the socket's bytes are records that only the TLS layer may read (a peek says
// nothing: a close_notify and a pipelined request look alike) and where no interim answer can be
// slipped in below it. The watch reads through the TLS stream into the session's buffer: request
// bytes (a pipelined request, kept for the next read) end the watch; the end of the client's
// input (close_notify or FIN; a TLS 1.2 close_notify closes the connection) or a reset means
// gone. Runs on the session's strand; co_await stop() before the stream is used again.
class tls_disconnect_watch {
 public:
  tls_disconnect_watch(tls_stream& stream, boost::beast::flat_buffer& buffer,
                       bool may_send_interim);

  const cancel_flag& flag() const;
  bool stream_broken() const { return false; }  // nothing is written
  // Ends the read under way and returns once it is over.
  boost::asio::awaitable<void> stop();

  struct state;

 private:
  std::shared_ptr<state> state_;
  tls_stream& stream_;
};

// The watch of each stream.
template <class Stream>
struct disconnect_watch_of;
template <>
struct disconnect_watch_of<plain_stream> {
  using type = disconnect_watch;
};
template <>
struct disconnect_watch_of<tls_stream> {
  using type = tls_disconnect_watch;
};

}  // namespace cua_s1
