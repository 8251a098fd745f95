// The request body bytes all HTTP connections may hold at once (--max-body-bytes-in-flight).
// A request reserves its body's size once its headers are read; when that would pass the budget
// it is answered 503 before its body is read. The bytes are held until the body has been
// answered.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <cstddef>

#include "common/shared_capacity.hpp"
#include "http/routes.hpp"

namespace cua_s1 {

// The budget itself is a shared_capacity of bytes (common/shared_capacity.hpp).

// What a request's body will hold, known from its headers: its Content-Length, or for a chunked
// body (whose size is known only once it has arrived) the largest body allowed, max_body_bytes.
// 0 for a body over max_body_bytes (the parser refuses it with 413 before reading it).
size_t body_bytes_to_hold(
    const boost::beast::http::request_parser<boost::beast::http::string_body>& parser);

// Turns `plan` into the refusal of a body beyond the budget: 503 {"detail": ...} with
// Retry-After: 1 (the session closes the connection, the body being unread).
void refuse_over_body_budget(request_plan& plan, unsigned version);

}  // namespace cua_s1
