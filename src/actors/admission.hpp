// Bounded admission: capacity in queued requests and questions, reserved before any decoding.
#pragma once

#include <cstddef>
#include <mutex>

namespace cua_s1 {

struct admission_limits {
  size_t max_requests = 64;
  size_t max_questions = 512;
};

class admission {
 public:
  explicit admission(admission_limits limits) : limits_(limits) {}

  // Reserves one request of `questions` questions; false (and nothing reserved) when full.
  bool try_reserve(size_t questions) {
    std::lock_guard lock(mutex_);
    if (requests_ + 1 > limits_.max_requests || questions_ + questions > limits_.max_questions)
      return false;
    ++requests_;
    questions_ += questions;
    return true;
  }

  void release(size_t questions) {
    std::lock_guard lock(mutex_);
    --requests_;
    questions_ -= questions;
  }

  size_t queued_requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  const admission_limits limits_;
  mutable std::mutex mutex_;
  size_t requests_ = 0;
  size_t questions_ = 0;
};

}  // namespace cua_s1
