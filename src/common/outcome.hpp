// An HTTP-style failure (status + detail) and a value-or-failure result used across the library.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace cua_s1 {

// A rejection or failure as the client sees it: an HTTP status and the `detail` message.
struct failure {
  int status = 500;
  std::string detail;
};

inline failure bad_request(std::string detail) { return {400, std::move(detail)}; }
inline failure unprocessable(std::string detail) { return {422, std::move(detail)}; }

// Holds either a T or a failure; no exceptions cross component boundaries.
template <class T>
class outcome {
 public:
  outcome(T value) : state_(std::move(value)) {}
  outcome(failure error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const failure& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, failure> state_;
};

}  // namespace cua_s1
