// A limit shared by its copies (open connections, request body bytes in flight), taken in RAII
// holds: try_take fails when the amount would pass the limit, and a hold gives its amount back
// when it is destroyed. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>

namespace cua_s1 {

class shared_capacity {
  struct state {
    explicit state(size_t limit) : limit(limit) {}
    const size_t limit;
    std::atomic<size_t> taken{0};
  };

 public:
  // An amount taken; given back when destroyed (a moved-from hold holds nothing).
  class hold {
   public:
    hold(hold&& other) noexcept : state_(std::move(other.state_)), amount_(other.amount_) {}
    hold& operator=(hold&& other) noexcept {
      if (this != &other) {
        give_back();
        state_ = std::move(other.state_);
        amount_ = other.amount_;
      }
      return *this;
    }
    hold(const hold&) = delete;
    hold& operator=(const hold&) = delete;
    ~hold() { give_back(); }

   private:
    friend class shared_capacity;
    hold(std::shared_ptr<state> state, size_t amount) : state_(std::move(state)), amount_(amount) {}
    void give_back() {
      if (state_) state_->taken -= amount_;
    }
    std::shared_ptr<state> state_;
    size_t amount_;
  };

  explicit shared_capacity(size_t limit) : state_(std::make_shared<state>(limit)) {}

  // `amount` held, or nothing when less than that is left. Zero always succeeds.
  std::optional<hold> try_take(size_t amount) {
    size_t taken = state_->taken.load();
    do {
      if (amount > state_->limit - taken) return std::nullopt;
    } while (!state_->taken.compare_exchange_weak(taken, taken + amount));
    return hold(state_, amount);
  }

  size_t limit() const { return state_->limit; }

 private:
  std::shared_ptr<state> state_;
};

}  // namespace cua_s1
