// Rate limit for a log line that repeats (an accept error, a refused connection): at most one
// line an interval, carrying how many times it happened since the last one. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

namespace cua_s1 {

class log_throttle {
 public:
  explicit log_throttle(std::chrono::steady_clock::duration interval = std::chrono::seconds(1))
      : interval_(interval) {}

  // Counts one occurrence. When a line is due (the first one, then one an interval), returns
  // the occurrences since the last line, this one included; else nothing (no line now).
  std::optional<uint64_t> occurred();

 private:
  std::mutex mutex_;
  const std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_line_;
  uint64_t unlogged_ = 0;
};

}  // namespace cua_s1
