// What a request's body holds of the body budget, and its refusal beyond the budget.
#include "http/body_budget.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

#include "api/decision_answer.hpp"
#include "http/response_headers.hpp"
#include "api/decision_request.hpp"

namespace cua_s1 {

namespace http = boost::beast::http;

size_t body_bytes_to_hold(const http::request_parser<http::string_body>& parser) {
  if (const auto length = parser.content_length())
    return *length <= max_body_bytes ? static_cast<size_t>(*length) : 0;
  return parser.chunked() ? max_body_bytes : 0;
}

void refuse_over_body_budget(request_plan& plan, unsigned version) {
  http_response response{http::status::service_unavailable, version};
  response.set(http::field::content_type, "application/json");
  set_retry_after(response, 1);
  response.body() = serialize_error({503, "too many request bytes in flight, retry later"});
  response.prepare_payload();
  plan.to = request_plan::destination::refused;
  plan.refusal = std::move(response);
}

}  // namespace cua_s1
