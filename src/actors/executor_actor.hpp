// The executor actor: the only code that touches a backend; it forms passes of several requests
// and keeps one pass in flight at a time.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/pass_budget.hpp"
#include "actors/start_condition.hpp"
#include "model/backend.hpp"

namespace cua_s1 {

// Owns a backend and a dedicated thread; work submitted from any thread runs there in order.
// Requests queue in the order they are submitted (ready order). When no pass is in flight the
// actor takes requests from the front while they fit the pass budget, stopping at the first that
// does not (nothing skips ahead), and starts them as one pass. The CPU backend computes on that
// thread inside backend::start; a device backend only enqueues there, and a timer on the same
// thread polls the pass (cudaEventQuery) until it is ready, so no thread waits on the device.
class executor_actor {
 public:
  // What one job gives back: the letter logits (or why there are none), the seconds its pass
  // spent in the vision encoder and the language prefills (zero when the job did not run), and
  // the number of that pass (1, 2, ... in start order; 0 when the job did not run).
  struct run_result {
    request_logits logits;
    stage_seconds seconds;
    uint64_t pass = 0;
  };
  using completion = std::function<void(run_result)>;

  // A pass as it starts: its number and what it holds.
  struct pass_summary {
    uint64_t number = 0;
    size_t requests = 0;
    size_t rows = 0;
    size_t patches = 0;
  };

  struct options {
    pass_budget budget;
    // How long a pass that is not full yet may wait after its first request was queued for
    // more to join it; 0: a pass starts as soon as the backend is free.
    std::chrono::microseconds batch_wait{0};
    // Called once, on the actor's thread, when the backend has become unusable.
    std::function<void(const std::string& reason)> on_unusable;
    // Called on the actor's thread as each pass starts (the pass metrics).
    std::function<void(const pass_summary&)> on_pass;
  };

  executor_actor(std::unique_ptr<backend> model, options settings);
  ~executor_actor();  // stop()

  // Answers every queued job 503 "server is shutting down" at once without running it, finishes
  // the pass in flight, and joins the actor's thread. Idempotent. Submit nothing after it: a job
  // submitted once the thread has been joined is never run nor answered.
  void stop();

  using clock = std::chrono::steady_clock;

  // Runs the model on `request` (kept alive until `done` has been called) and calls `done` on the
  // actor's thread. A job whose condition refuses it when its pass forms is not run: `done`
  // gets 503 (deadline passed) or 499 (client gone).
  void submit(std::shared_ptr<const prepared_request> request, completion done,
              start_condition when = {});

  // Poll interval while a pass is in flight.
  static constexpr std::chrono::microseconds poll_interval{50};

 private:
  struct job {
    std::shared_ptr<const prepared_request> request;
    completion done;
    start_condition when;
    pass_share share;
    clock::time_point queued;
  };
  void start_next();
  bool worth_waiting() const;
  bool fills_a_pass() const;
  void wait_for_more();
  void cancel_wait();
  std::vector<job> take_pass();
  void launch();
  void poll();
  void finish();
  std::optional<failure> refusal(const job& queued) const;
  static void answer_unrun(job& unrun, failure why);

  std::unique_ptr<backend> model_;
  options options_;
  boost::asio::thread_pool thread_{1};
  boost::asio::steady_timer poll_timer_{thread_.get_executor()};
  boost::asio::steady_timer wait_timer_{thread_.get_executor()};
  // Touched on the actor's thread only:
  std::deque<job> queue_;
  std::vector<job> current_;  // the pass in flight, in the order its outcomes come back
  std::unique_ptr<pending_run> in_flight_;
  uint64_t passes_ = 0;
  bool waiting_ = false;         // wait_timer_ holds back the next pass
  uint64_t wait_generation_ = 0;  // tells a stale wait_timer_ completion from the current one
  bool reported_unusable_ = false;
  bool stopping_ = false;
};

}  // namespace cua_s1
