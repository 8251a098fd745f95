// The body budget shared by the HTTP sessions.
#include "http/body_budget.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

#include "api/decision_answer.hpp"
#include "api/decision_request.hpp"

namespace cua_s1 {

namespace http = boost::beast::http;

struct body_budget::reservation::state {
  explicit state(size_t capacity) : capacity(capacity) {}
  const size_t capacity;
  std::atomic<size_t> held{0};
};

body_budget::body_budget(size_t capacity)
    : state_(std::make_shared<reservation::state>(capacity)) {}

body_budget::reservation::~reservation() {
  if (state_) state_->held -= bytes_;
}

body_budget::reservation& body_budget::reservation::operator=(reservation&& other) noexcept {
  if (this != &other) {
    if (state_) state_->held -= bytes_;
    state_ = std::move(other.state_);
    bytes_ = other.bytes_;
  }
  return *this;
}

std::optional<body_budget::reservation> body_budget::try_reserve(size_t bytes) {
  size_t held = state_->held.load();
  do {
    if (bytes > state_->capacity - held) return std::nullopt;
  } while (!state_->held.compare_exchange_weak(held, held + bytes));
  return reservation(state_, bytes);
}

size_t body_bytes_to_hold(const http::request_parser<http::string_body>& parser) {
  if (const auto length = parser.content_length())
    return *length <= max_body_bytes ? static_cast<size_t>(*length) : 0;
  return parser.chunked() ? max_body_bytes : 0;
}

void refuse_over_body_budget(request_plan& plan, unsigned version) {
  http_response response{http::status::service_unavailable, version};
  response.set(http::field::content_type, "application/json");
  response.set(http::field::retry_after, "1");
  response.body() = serialize_error({503, "too many request bytes in flight, retry later"});
  response.prepare_payload();
  plan.to = request_plan::destination::refused;
  plan.refusal = std::move(response);
}

}  // namespace cua_s1
