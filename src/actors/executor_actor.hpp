// The executor actor: the only code that touches a backend; one run in flight at a time.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "actors/start_condition.hpp"
#include "model/backend.hpp"

namespace cua_s1 {

// Owns a backend and a dedicated thread; work submitted from any thread runs there in order.
// The CPU backend computes on that thread inside backend::start; a device backend only enqueues
// there, and a timer on the same thread polls the run (cudaEventQuery) until it is ready, so no
// thread waits on the device.
class executor_actor {
 public:
  // What one job gives back: the letter logits (or why there are none) and the seconds the
  // backend spent in the vision encoder and the language prefills of this run (zero when the
  // job did not run), read on the actor's thread as the run is collected.
  struct run_result {
    outcome<std::vector<question_logits>> logits;
    backend::stage_seconds seconds;
  };
  using completion = std::function<void(run_result)>;
  // Called once, on the actor's thread, when the backend has become unusable.
  using unusable_handler = std::function<void(const std::string& reason)>;

  explicit executor_actor(std::unique_ptr<backend> model, unusable_handler on_unusable = {});
  ~executor_actor();  // stop()

  // Answers every queued job 503 "server is shutting down" at once without running it, finishes
  // the run in flight, and joins the actor's thread. Idempotent. Submit nothing after it: a job
  // submitted once the thread has been joined is never run nor answered.
  void stop();

  using clock = std::chrono::steady_clock;

  // Runs the model on `request` (kept alive until `done` has been called) and calls `done` on the
  // actor's thread. A job whose condition refuses it when its turn comes is not run: `done`
  // gets 503 (deadline passed) or 499 (client gone).
  void submit(std::shared_ptr<const prepared_request> request, completion done,
              start_condition when = {});

  // Poll interval while a run is in flight.
  static constexpr std::chrono::microseconds poll_interval{50};

 private:
  struct job {
    std::shared_ptr<const prepared_request> request;
    completion done;
    start_condition when;
  };
  void start_next();
  void poll();
  void finish();
  void answer_unrun(job& unrun, failure why);

  std::unique_ptr<backend> model_;
  unusable_handler on_unusable_;
  boost::asio::thread_pool thread_{1};
  boost::asio::steady_timer poll_timer_{thread_.get_executor()};
  std::deque<job> queue_;           // touched on the actor's thread only
  job current_;
  std::unique_ptr<pending_run> in_flight_;
  bool reported_unusable_ = false;
  bool stopping_ = false;  // touched on the actor's thread only
};

}  // namespace cua_s1
