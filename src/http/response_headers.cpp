// The client-facing headers shared by every answer.
#include "http/response_headers.hpp"

#include <boost/beast/http/field.hpp>
#include <cstdio>

namespace cua_s1 {

namespace http = boost::beast::http;

void set_request_id(http_response& response, const std::string& request_id) {
  response.set("X-Request-Id", request_id);
  response.set("x-typesafe-request-id", request_id);
}

void set_retry_after(http_response& response, int seconds) {
  response.set(http::field::retry_after, std::to_string(seconds));
  response.set("Retry-After-Ms", std::to_string(int64_t{seconds} * 1000));
}

void set_server_timing(http_response& response, const stage_durations& durations) {
  char value[160];
  std::snprintf(value, sizeof value, "queue;dur=%.3f, decode;dur=%.3f, inference;dur=%.3f",
                durations.queue_ms, durations.decode_ms, durations.inference_ms);
  response.set("Server-Timing", value);
}

}  // namespace cua_s1
