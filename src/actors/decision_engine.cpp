// The request path: validate on the caller's thread, reserve capacity, prepare on the decode
// pool, run on the executor actor, assemble and complete.
#include "actors/decision_engine.hpp"

#include <chrono>
#include <future>

#include "actors/response_assembler.hpp"
#include "common/json_log.hpp"

namespace cua_s1 {
namespace {

// The reference worker's warmup: a 224x224 white screenshot, two options (spec/contract.md
// section 10.2). The PNG was written by Pillow 11.3.0.
constexpr const char* warmup_body =
    "{\"model\":\"cua-s1-4b-0.2\",\"state\":{\"image\":\"data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAOAAAADgCAIAAACVT/22AAACaklEQVR4nO3SMQEAIAzAMMC/5+GAlx6Jgh7dM7Og6vwOgBeDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXNoKQZlDSDkmZQ0gxKmkFJMyhpBiXtAsmxBL2HYLgvAAAAAElFTkSuQmCC\"},"
    "\"questions\":{\"warmup\":{\"type\":\"choice\",\"instructions\":\"Continue\","
    "\"criteria\":{\"continue\":\"Continue\",\"cancel\":\"Cancel\"}}}}";

// 503 + Retry-After for work that was dropped before it ran (its deadline, a shutdown), or 499
// when its client had gone (nobody reads that answer; it is counted and logged).
decision_response not_run(const failure& why) {
  decision_response response = error_response(why);
  if (why.status == 503) response.retry_after_seconds = 1;
  return response;
}

}  // namespace

decision_engine::decision_engine(boost::asio::any_io_executor io,
                                 std::shared_ptr<const request_preparer> preparer,
                                 std::unique_ptr<backend> model, engine_options options)
    : io_(std::move(io)),
      preparer_(std::move(preparer)),
      options_(std::move(options)),
      admission_(options_.limits),
      backend_description_(model->description()),
      pixel_values_made_(model->pixel_values_made()),
      decode_pool_(options_.decode_threads),
      executor_(std::move(model), [this](const std::string& reason) {
        failed_ = true;
        ready_ = false;
        if (options_.on_backend_unusable) options_.on_backend_unusable(reason);
      }) {}

// Members die in reverse order, but the executor's completions use the admission and the
// metrics: stop the decode pool, then the executor, before anything else goes.
decision_engine::~decision_engine() {
  decode_pool_.join();
  executor_.stop();
}

void decision_engine::start(std::string body, std::string request_id, cancel_flag cancelled,
                            std::function<void(decision_response)> complete) {
  using clock = std::chrono::steady_clock;
  const auto received = clock::now();
  auto request = preparer_->parse(body);
  if (!request) return complete(error_response(request.error()));
  const size_t questions = request->questions.size();
  if (!admission_.try_reserve(questions)) {
    log_event(log_level::warning, "at_capacity", {{"request_id", request_id}});
    decision_response busy = error_response({503, "server at capacity, retry later"});
    busy.retry_after_seconds = 1;
    return complete(std::move(busy));
  }
  const start_condition when{received + options_.request_timeout, std::move(cancelled)};
  boost::asio::post(decode_pool_, [this, questions, received, when, request = std::move(*request),
                                   request_id = std::move(request_id),
                                   complete = std::move(complete)]() mutable {
    if (auto refused = when.refusal("it could start")) {
      admission_.release(questions);
      log_event(log_level::warning, refused->status == 499 ? "request_cancelled" : "request_timeout",
                {{"request_id", request_id}, {"stage", "decode"}});
      return complete(not_run(*refused));
    }
    auto prepared = preparer_->prepare(std::move(request), pixel_values_made_);
    if (!prepared) {
      admission_.release(questions);
      return complete(error_response(prepared.error()));
    }
    metrics_.observe_stage(stage::decode, prepared->decode_seconds);
    metrics_.observe_stage(stage::prepare, prepared->prepare_seconds);
    metrics_.observe_image_pixels(double(prepared->image.width) * prepared->image.height);
    for (const auto& q : prepared->questions) metrics_.observe_prompt_tokens(double(q.input_ids.size()));
    auto shared = std::make_shared<const prepared_request>(std::move(*prepared));
    metrics_.inflight_requests += 1;
    metrics_.inflight_questions += static_cast<int64_t>(questions);
    executor_.submit(shared, [this, shared, questions, received, request_id = std::move(request_id),
                              complete = std::move(complete)](
                                 executor_actor::run_result result) {
      metrics_.inflight_requests -= 1;
      metrics_.inflight_questions -= static_cast<int64_t>(questions);
      metrics_.observe_stage(stage::vision, result.seconds.vision);
      metrics_.observe_stage(stage::language, result.seconds.language);
      const auto& logits = result.logits;
      const bool dropped =  // the executor did not run it
          !logits && (logits.error().status == 503 || logits.error().status == 499);
      if (dropped)
        log_event(log_level::warning, "request_not_run",
                  {{"request_id", request_id}, {"detail", logits.error().detail}});
      else if (!logits)
        log_event(log_level::error, "inference_failed",
                  {{"request_id", request_id}, {"detail", logits.error().detail}});
      decision_response response =
          dropped ? not_run(logits.error()) : assemble_response(options_.identity, *shared, logits);
      admission_.release(questions);
      metrics_.observe_stage(stage::total,
                             std::chrono::duration<double>(clock::now() - received).count());
      complete(std::move(response));
    }, when);
  });
}

outcome<bool> decision_engine::warm_up() {
  std::promise<decision_response> promise;
  auto future = promise.get_future();
  start(warmup_body, "warmup", nullptr,
        [&promise](decision_response response) { promise.set_value(std::move(response)); });
  decision_response response = future.get();
  if (response.status != 200) return failure{500, "warmup decision failed: " + response.body};
  if (!draining_ && !failed_) ready_ = true;  // a signal during the warmup keeps it unready
  return true;
}

std::string decision_engine::unavailable_detail() const {
  if (failed_) return "server stopped after a device error, retry elsewhere";
  if (draining_) return "server is shutting down, retry elsewhere";
  return "server is starting, retry later";
}

const char* decision_engine::unready_state() const {
  return failed_ ? "failed" : draining_ ? "draining" : "starting";
}

}  // namespace cua_s1
