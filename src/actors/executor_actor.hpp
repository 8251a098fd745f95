// The executor actor: the only code that touches a backend; runs one batch at a time.
#pragma once

#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>

#include "model/backend.hpp"

namespace cua_s1 {

// Owns a backend and a dedicated thread; work submitted from any thread runs there in order.
// The CPU backend computes on that thread; a device backend enqueues and completes from its
// event poller instead.
class executor_actor {
 public:
  using completion = std::function<void(outcome<std::vector<question_logits>>)>;

  explicit executor_actor(std::unique_ptr<backend> model);
  ~executor_actor();  // waits for submitted work to finish

  // Runs the model on `request` (kept alive until `done` has been called) and calls `done` on the
  // actor's thread.
  void submit(std::shared_ptr<const prepared_request> request, completion done);

  const backend& model() const { return *model_; }

 private:
  std::unique_ptr<backend> model_;
  boost::asio::thread_pool thread_{1};
};

}  // namespace cua_s1
