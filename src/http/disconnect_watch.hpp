// Notices, while a decision waits, a client that has gone away, so that its work not started yet
// is dropped (answered 499 to nobody). A client that only half-closes (shutdown(SHUT_WR) after its
// request) has not gone: it still reads, and gets its real answer.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "actors/decision_engine.hpp"

namespace cua_s1 {

// A reset or error on the socket means gone. The end of the client's input (FIN) cannot tell a
// close from a half-close, so on an HTTP/1.1 connection the watch then writes an interim
// "100 Continue" (which every HTTP/1.1 client must accept before the final answer): a closed
// socket answers it with a reset, a half-closed one reads it. On HTTP/1.0, which must not get
// interim answers, only a reset counts. Bytes of a pipelined next request end the watch.
// Runs on the session's strand; stop() before the socket is used again.
class disconnect_watch {
 public:
  // `may_send_interim`: the request is HTTP/1.1.
  disconnect_watch(boost::asio::ip::tcp::socket& socket, bool may_send_interim);

  // Set once the client is gone.
  const cancel_flag& flag() const;
  // The interim answer was only partly written (a client that neither reads nor sends): the
  // connection can carry no answer and must close.
  bool stream_broken() const;
  void stop(boost::asio::ip::tcp::socket& socket);

  struct state;

 private:
  std::shared_ptr<state> state_;
};

}  // namespace cua_s1
