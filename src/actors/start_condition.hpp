// When queued work is no longer worth starting: its deadline has passed, or its client has gone.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/outcome.hpp"

namespace cua_s1 {

// Set by the caller (the HTTP session) when the client closes its connection before the answer.
using cancel_flag = std::shared_ptr<std::atomic<bool>>;

struct start_condition {
  using clock = std::chrono::steady_clock;
  clock::time_point deadline = clock::time_point::max();
  cancel_flag cancelled;  // may be null: never cancelled

  bool abandoned() const { return cancelled && cancelled->load(); }

  // Why the work must not start now, if it must not: 499 when the client has gone, 503 when
  // the deadline has passed; `stage` ends the detail ("it could start").
  std::optional<failure> refusal(const char* stage) const {
    if (abandoned()) return failure{499, std::string("client closed the connection before ") + stage};
    if (clock::now() >= deadline)
      return failure{503, std::string("request timed out before ") + stage + ", retry later"};
    return std::nullopt;
  }
};

}  // namespace cua_s1
