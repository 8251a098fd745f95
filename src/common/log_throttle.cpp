// The log line rate limit.
#include "common/log_throttle.hpp"

namespace cua_s1 {

std::optional<uint64_t> log_throttle::occurred() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  ++unlogged_;
  if (last_line_ && now - *last_line_ < interval_) return std::nullopt;
  last_line_ = now;
  const uint64_t count = unlogged_;
  unlogged_ = 0;
  return count;
}

}  // namespace cua_s1
