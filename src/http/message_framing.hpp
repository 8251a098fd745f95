// The framing rules for request bodies that Beast's parser leaves open, so that no request can
// hide inside another's body (request smuggling) and reach the server as a request of its own.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>

namespace cua_s1 {

// Why the body of the request with `header` cannot be delimited without guessing, or no error.
// Refused (RFC 9112 section 6): a Transfer-Encoding other than exactly one `chunked` (Beast reads
// `gzip`, `chunked, chunked` or two fields as "no body" and then the body as the next request),
// Transfer-Encoding together with Content-Length, and more than one Content-Length (two fields,
// or a list). The caller answers 400 and closes the connection without reading further.
boost::beast::error_code message_framing_error(
    const boost::beast::http::request_header<>& header);

}  // namespace cua_s1
