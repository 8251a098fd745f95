// The decision engine: the library entry point for Asio hosts. Admission, body decoding, the
// decode pool, the executor actor and answer assembly behind one async_decide().
#pragma once

#include <atomic>
#include <chrono>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <string>

#include "actors/admission.hpp"
#include "actors/decision_response.hpp"
#include "actors/executor_actor.hpp"
#include "actors/metrics.hpp"
#include "api/decision_body.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1 {

struct engine_options {
  size_t decode_threads = 2;  // threads for body decoding, images, preprocessing, tokenizing
  admission_limits limits;
  std::string identity = model_identity;  // the "model" of answers and /health
  // Work not started this long after the request arrived is dropped and answered 503 (checked
  // before decoding and before the model runs).
  std::chrono::milliseconds request_timeout{30000};
  // What one pass of the model may hold (--max-batch-requests, --max-batch-tokens,
  // --max-batch-patches), and how long a pass not full yet waits for more (--batch-wait-us).
  pass_budget batching;
  std::chrono::microseconds batch_wait{0};
  // Called once when the backend has become unusable (a sticky device error); the engine is
  // already unready by then. The server binary stops with a non-zero exit.
  std::function<void(const std::string& reason)> on_backend_unusable;
};

class decision_engine {
 public:
  // `io` is the default executor for completions (a handler's associated executor wins).
  decision_engine(boost::asio::any_io_executor io, std::shared_ptr<const request_preparer> preparer,
                  std::unique_ptr<backend> model, engine_options options);
  ~decision_engine();

  decision_engine(const decision_engine&) = delete;
  decision_engine& operator=(const decision_engine&) = delete;

  // Answers one /v1/systemone body. Completion signature: void(decision_response). Works with
  // callbacks, boost::asio::use_future and use_awaitable. Never fails by exception: every
  // outcome, including 400/422/500/503, is a decision_response.
  template <class CompletionToken>
  auto async_decide(std::string body, CompletionToken&& token) {
    return async_decide(std::move(body), std::string(), std::forward<CompletionToken>(token));
  }

  // The same with a request id that every log line of this request carries.
  template <class CompletionToken>
  auto async_decide(std::string body, std::string request_id, CompletionToken&& token) {
    return async_decide(std::move(body), std::move(request_id), cancel_flag(),
                        std::forward<CompletionToken>(token));
  }

  // The same with a flag the caller sets when its client has gone: work not started by then is
  // dropped (status 499, before decoding or before the model runs). `body` may carry its
  // Content-Type and Content-Encoding (a multipart or compressed body); a string is JSON.
  template <class CompletionToken>
  auto async_decide(decision_body body, std::string request_id, cancel_flag cancelled,
                    CompletionToken&& token) {
    return boost::asio::async_initiate<CompletionToken, void(decision_response)>(
        [this](auto handler, decision_body body, std::string request_id, cancel_flag cancelled) {
          auto executor = boost::asio::get_associated_executor(handler, io_);
          auto work = boost::asio::make_work_guard(executor);
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          start(std::move(body), std::move(request_id), std::move(cancelled),
                [shared, work = std::move(work)](decision_response response) mutable {
            auto executor = work.get_executor();
            boost::asio::post(executor, [shared, response = std::move(response)]() mutable {
              (*shared)(std::move(response));
            });
            work.reset();
          });
        },
        token, std::move(body), std::move(request_id), std::move(cancelled));
  }

  // Runs one real decision (a 224x224 white screenshot) and marks the engine ready on success.
  // Blocks the calling thread; call it before serving, not from an engine callback.
  outcome<bool> warm_up();

  bool ready() const { return ready_.load(); }

  // Graceful shutdown: the engine turns unready for good (new decisions get 503) while the work
  // already admitted finishes.
  void begin_drain() {
    draining_ = true;
    ready_ = false;
  }
  bool draining() const { return draining_.load(); }
  // Why decisions are refused while not ready (the 503 detail): starting, draining or failed.
  std::string unavailable_detail() const;
  // The "status" of /health while not ready: "starting", "draining" or "failed".
  const char* unready_state() const;
  const std::string& identity() const { return options_.identity; }
  std::string backend_description() const { return backend_description_; }
  size_t queued_requests() const { return admission_.queued_requests(); }
  server_metrics& metrics() { return metrics_; }
  const server_metrics& metrics() const { return metrics_; }

 private:
  struct request_in_flight;
  using clock = std::chrono::steady_clock;

  // The request path, stage by stage (decision_engine.cpp).
  void start(decision_body body, std::string request_id, cancel_flag cancelled,
             std::function<void(decision_response)> complete);
  void decode_and_prepare(const std::shared_ptr<request_in_flight>& request);
  outcome<decision_request> decode_body(decision_body body) const;
  outcome<std::shared_ptr<const prepared_request>> prepare(decision_request request);
  void run(const std::shared_ptr<request_in_flight>& request);
  void answer(request_in_flight& request, executor_actor::run_result result);
  executor_actor::options executor_settings();

  boost::asio::any_io_executor io_;
  std::shared_ptr<const request_preparer> preparer_;
  engine_options options_;
  admission admission_;
  // Read from the backend before the executor takes it: the backend is the executor's alone.
  std::string backend_description_;
  pixel_values_on pixel_values_made_;
  boost::asio::thread_pool decode_pool_;  // body decoding and preparation
  // Answer assembly, apart from the decode pool so that it never waits behind image decodes.
  boost::asio::thread_pool answer_thread_{1};
  executor_actor executor_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> failed_{false};
  server_metrics metrics_;
};

}  // namespace cua_s1
