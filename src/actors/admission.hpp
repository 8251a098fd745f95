// Bounded admission: capacity in queued requests and questions, reserved before any decoding.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>

namespace cua_s1 {

struct admission_limits {
  size_t max_requests = 64;
  size_t max_questions = 512;
};

class admission {
 public:
  // One admitted request's hold on capacity: its request slot, then its questions once they are
  // known. Gives everything back exactly once: at release() or, failing that, when destroyed.
  class ticket {
   public:
    ticket(ticket&& other) noexcept : owner_(other.owner_), questions_(other.questions_) {
      other.owner_ = nullptr;
    }
    ticket& operator=(ticket&& other) noexcept {
      if (this != &other) {
        release();
        owner_ = other.owner_;
        questions_ = other.questions_;
        other.owner_ = nullptr;
      }
      return *this;
    }
    ticket(const ticket&) = delete;
    ticket& operator=(const ticket&) = delete;
    ~ticket() { release(); }

    // Adds `questions` to this request's reservation; false, and nothing added, when they would
    // pass the limit (the request slot stays held until release).
    bool try_add_questions(size_t questions) {
      if (!owner_ || !owner_->try_reserve(0, questions)) return false;
      questions_ += questions;
      return true;
    }

    // Gives back the request slot and the questions; later calls do nothing.
    void release() {
      if (!owner_) return;
      owner_->give_back(1, questions_);
      owner_ = nullptr;
      questions_ = 0;
    }

    size_t questions() const { return questions_; }

   private:
    friend class admission;
    explicit ticket(admission& owner) : owner_(&owner) {}

    admission* owner_;  // null once released
    size_t questions_ = 0;
  };

  explicit admission(admission_limits limits) : limits_(limits) {}

  // A request slot with no questions yet, or nothing when max_requests are already admitted.
  std::optional<ticket> try_admit() {
    if (!try_reserve(1, 0)) return std::nullopt;
    return ticket(*this);
  }

  // Requests admitted and not yet released (the queue depth).
  size_t queued_requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  size_t queued_questions() const {
    std::lock_guard lock(mutex_);
    return questions_;
  }

 private:
  // Reserves both or neither.
  bool try_reserve(size_t requests, size_t questions) {
    std::lock_guard lock(mutex_);
    if (requests_ + requests > limits_.max_requests ||
        questions_ + questions > limits_.max_questions)
      return false;
    requests_ += requests;
    questions_ += questions;
    return true;
  }

  void give_back(size_t requests, size_t questions) {
    std::lock_guard lock(mutex_);
    requests_ -= requests;
    questions_ -= questions;
  }

  const admission_limits limits_;
  mutable std::mutex mutex_;
  size_t requests_ = 0;
  size_t questions_ = 0;
};

}  // namespace cua_s1
