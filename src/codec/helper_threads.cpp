// A small pool of sleeping threads woken per call (see helper_threads.hpp).
#include "codec/helper_threads.hpp"

#include <algorithm>
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
      helpers = std::min(helpers, max_pooled_threads);
      while (threads_.size() < helpers) {
        try {
          threads_.emplace_back([this] { serve(); });
        } catch (const std::system_error&) {
          helpers = static_cast<unsigned>(threads_.size());  // no more threads to be had
        }
      }
      queue_.insert(queue_.end(), helpers, &mine);
    }
    for (unsigned i = 0; i < helpers; ++i) wake_.notify_one();
    work();
    std::unique_lock lock(mutex_);
    std::erase(queue_, &mine);  // copies not started by now are not needed
    done_.wait(lock, [&] { return mine.running == 0; });
  }

 private:
  void serve() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job* next = queue_.front();
      queue_.pop_front();
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
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace

void run_with_helpers(unsigned helpers, const std::function<void()>& work) {
  if (helpers == 0) return work();
  static helper_pool pool;
  pool.run(helpers, work);
}

}  // namespace cua_s1
