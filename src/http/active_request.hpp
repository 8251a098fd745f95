// Counts a request while it is in flight, until its answer has been written (graceful shutdown
// waits for the count to reach 0).
#pragma once

#include <atomic>
#include <cstddef>

namespace cua_s1 {

struct active_request {
  std::atomic<size_t>& count;
  explicit active_request(std::atomic<size_t>& c) : count(c) { ++count; }
  ~active_request() { --count; }
  active_request(const active_request&) = delete;
  active_request& operator=(const active_request&) = delete;
};

}  // namespace cua_s1
