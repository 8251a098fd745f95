// The request body bytes all HTTP connections may hold at once (--max-body-bytes-in-flight).
// A request reserves its body's size once its headers are read; when that would pass the budget
// it is answered 503 before its body is read. The bytes are held until the body has been
// answered.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>

#include "http/routes.hpp"

namespace cua_s1 {

// A copy shares the budget. Thread-safe.
class body_budget {
 public:
  explicit body_budget(size_t capacity);

  // Bytes held for one request's body; given back when it is destroyed.
  class reservation {
   public:
    reservation(reservation&& other) noexcept
        : state_(std::move(other.state_)), bytes_(other.bytes_) {}
    reservation& operator=(reservation&& other) noexcept;
    reservation(const reservation&) = delete;
    ~reservation();

   private:
    friend class body_budget;
    struct state;
    reservation(std::shared_ptr<state> state, size_t bytes)
        : state_(std::move(state)), bytes_(bytes) {}
    std::shared_ptr<state> state_;
    size_t bytes_;
  };

  // `bytes` held, or nothing when fewer than that are left. Zero bytes always succeed.
  std::optional<reservation> try_reserve(size_t bytes);

 private:
  std::shared_ptr<reservation::state> state_;
};

// What a request's body will hold, known from its headers: its Content-Length, or for a chunked
// body (whose size is known only once it has arrived) the largest body allowed, max_body_bytes.
// 0 for a body over max_body_bytes (the parser refuses it with 413 before reading it).
size_t body_bytes_to_hold(
    const boost::beast::http::request_parser<boost::beast::http::string_body>& parser);

// Turns `plan` into the refusal of a body beyond the budget: 503 {"detail": ...} with
// Retry-After: 1 (the session closes the connection, the body being unread).
void refuse_over_body_budget(request_plan& plan, unsigned version);

}  // namespace cua_s1
