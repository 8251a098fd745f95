// A small pool of sleeping threads woken per call (see helper_threads.hpp).
#include "codec/helper_threads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace cua_s1 {
namespace {

constexpr unsigned max_pooled_threads = 8;

// One caller's work and how many pooled threads are running it (guarded by the pool's mutex).
struct job {
  const std::function<void()>* work;
  unsigned running = 0;
};

class helper_pool {
 public:
  ~helper_pool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

  void run(unsigned helpers, const std::function<void()>& work) {
    job mine{&work};
    {
      std::lock_guard lock(mutex_);
      helpers = ensure_threads(helpers);
      queue_.insert(queue_.end(), helpers, &mine);
      queued_.store(queue_.size(), std::memory_order_release);
    }
    for (unsigned i = 0; i < helpers; ++i) wake_.notify_one();
    work();
    std::unique_lock lock(mutex_);
    std::erase(queue_, &mine);  // copies not started by now are not needed
    queued_.store(queue_.size(), std::memory_order_release);
    done_.wait(lock, [&] { return mine.running == 0; });
  }

  void wake_ahead(unsigned helpers, std::chrono::microseconds spin) {
    {
      std::lock_guard lock(mutex_);
      helpers = ensure_threads(helpers);
      spinners_wanted_ = helpers;
      spin_until_ = std::chrono::steady_clock::now() + spin;
    }
    for (unsigned i = 0; i < helpers; ++i) wake_.notify_one();
  }

 private:
  // Starts pooled threads up to `helpers` (at most max_pooled_threads); how many there are.
  unsigned ensure_threads(unsigned helpers) {
    helpers = std::min(helpers, max_pooled_threads);
    while (threads_.size() < helpers) {
      try {
        threads_.emplace_back([this] { serve(); });
      } catch (const std::system_error&) {
        return static_cast<unsigned>(threads_.size());  // no more threads to be had
      }
    }
    return helpers;
  }

  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty() || spinners_wanted_ > 0; });
      if (stopping_) return;
      if (queue_.empty()) {  // woken ahead: spin (awake, caches warm) until work or the deadline
        --spinners_wanted_;
        const auto deadline = spin_until_;
        lock.unlock();
        while (queued_.load(std::memory_order_acquire) == 0 &&
               std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
        lock.lock();
        continue;
      }
      job* next = queue_.front();
      queue_.pop_front();
      queued_.store(queue_.size(), std::memory_order_release);
      ++next->running;
      lock.unlock();
      (*next->work)();
      lock.lock();
      if (--next->running == 0) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;  // work queued, or stopping
  std::condition_variable done_;  // some job's last running copy returned
  std::deque<job*> queue_;
  std::atomic<size_t> queued_{0};  // queue_.size(), read by spinning threads without the mutex
  unsigned spinners_wanted_ = 0;   // threads woken ahead that have not started spinning yet
  std::chrono::steady_clock::time_point spin_until_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

helper_pool& pool() {
  static helper_pool instance;
  return instance;
}

}  // namespace

void run_with_helpers(unsigned helpers, const std::function<void()>& work) {
  if (helpers == 0) return work();
  pool().run(helpers, work);
}

void wake_helpers_ahead(unsigned helpers, std::chrono::microseconds spin) {
  if (helpers > 0) pool().wake_ahead(helpers, spin);
}

}  // namespace cua_s1
