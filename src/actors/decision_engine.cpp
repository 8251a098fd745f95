// The request path as its stages: admit (the caller's thread) -> decode the body -> prepare
// (the decode pool) -> run (the executor actor) -> answer (the answer thread).
#include "actors/decision_engine.hpp"

#include <algorithm>
#include <chrono>
#include <future>

#include "actors/response_assembler.hpp"
#include "api/body_decoding.hpp"
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

// 503 with Retry-After for a request the admission refused (logged).
decision_response at_capacity(const std::string& request_id) {
  log_event(log_level::warning, "at_capacity", {{"request_id", request_id}});
  decision_response busy = error_response({503, "server at capacity, retry later"});
  busy.retry_after_seconds = 1;
  return busy;
}

// The stages of a request that ran, in ms; the queue is what the other stages leave of `total`.
stage_durations durations_of(const prepared_request& prepared, const stage_seconds& ran,
                             double total) {
  const double decode = prepared.decode_seconds + prepared.prepare_seconds;
  const double inference = ran.vision + ran.language;
  return {std::max(0.0, total - decode - inference) * 1000, decode * 1000, inference * 1000};
}

}  // namespace

// One request between its stages: what it came with, its hold on capacity and, once prepared,
// the model inputs. Each stage hands it to the next; every path ends in finish(), once.
struct decision_engine::request_in_flight {
  decision_body body;
  std::string request_id;
  clock::time_point received;
  start_condition when;
  admission::ticket ticket;
  std::function<void(decision_response)> complete;
  std::shared_ptr<const prepared_request> prepared;

  // Gives the capacity back, then answers.
  void finish(decision_response response) {
    ticket.release();
    complete(std::move(response));
  }
};

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
      executor_(std::move(model), executor_settings()) {}

// The executor's budget and hooks: an unusable backend fails the engine, and each pass is
// measured.
executor_actor::options decision_engine::executor_settings() {
  executor_actor::options settings;
  settings.budget = options_.batching;
  settings.batch_wait = options_.batch_wait;
  settings.on_unusable = [this](const std::string& reason) {
    failed_ = true;
    ready_ = false;
    if (options_.on_backend_unusable) options_.on_backend_unusable(reason);
  };
  settings.on_pass = [this](const executor_actor::pass_summary& pass) {
    metrics_.observe_pass(pass.requests, pass.rows, pass.patches);
  };
  return settings;
}

// Members die in reverse order, but every stage uses the admission and the metrics: drain the
// stages in their order (decode pool, executor, answer thread) before anything else goes.
decision_engine::~decision_engine() {
  decode_pool_.join();
  executor_.stop();
  answer_thread_.join();
}

// Admit, on the caller's thread: a request slot before anything else, or 503 at once.
void decision_engine::start(decision_body body, std::string request_id, cancel_flag cancelled,
                            std::function<void(decision_response)> complete) {
  const auto received = clock::now();
  auto ticket = admission_.try_admit();
  if (!ticket) return complete(at_capacity(request_id));
  auto request = std::make_shared<request_in_flight>(request_in_flight{
      std::move(body), std::move(request_id), received,
      start_condition{received + options_.request_timeout, std::move(cancelled)},
      std::move(*ticket), std::move(complete), nullptr});
  boost::asio::post(decode_pool_, [this, request] { decode_and_prepare(request); });
}

// Decode the body, count its questions, prepare: on the decode pool, off the network threads.
void decision_engine::decode_and_prepare(const std::shared_ptr<request_in_flight>& request) {
  if (auto refused = request->when.refusal("it could start")) {
    log_event(log_level::warning, refused->status == 499 ? "request_cancelled" : "request_timeout",
              {{"request_id", request->request_id}, {"stage", "decode"}});
    return request->finish(not_run(*refused));
  }
  auto decoded = decode_body(std::move(request->body));  // the body is freed once decoded
  if (!decoded) return request->finish(error_response(decoded.error()));
  if (!request->ticket.try_add_questions(decoded->questions.size()))
    return request->finish(at_capacity(request->request_id));
  auto prepared = prepare(std::move(*decoded));
  if (!prepared) return request->finish(error_response(prepared.error()));
  request->prepared = std::move(*prepared);
  run(request);
}

// The body as a validated request: its content coding, multipart form, strict JSON and the
// contract (400/413/415/422).
outcome<decision_request> decision_engine::decode_body(decision_body body) const {
  return decode_decision_body(std::move(body));
}

// Image decoding, preprocessing, prompts, tokens and positions (422), with their metrics.
outcome<std::shared_ptr<const prepared_request>> decision_engine::prepare(
    decision_request request) {
  auto prepared = preparer_->prepare(std::move(request), pixel_values_made_);
  if (!prepared) return prepared.error();
  metrics_.observe_stage(stage::decode, prepared->decode_seconds);
  metrics_.observe_stage(stage::prepare, prepared->prepare_seconds);
  metrics_.observe_image_pixels(double(prepared->image.width) * prepared->image.height);
  for (const auto& q : prepared->questions)
    metrics_.observe_prompt_tokens(double(q.input_ids.size()));
  return std::make_shared<const prepared_request>(std::move(*prepared));
}

// Run, on the executor actor; its result goes straight on to the answer thread.
void decision_engine::run(const std::shared_ptr<request_in_flight>& request) {
  const auto questions = static_cast<int64_t>(request->prepared->questions.size());
  metrics_.inflight_requests += 1;
  metrics_.inflight_questions += questions;
  auto ran = [this, request, questions](executor_actor::run_result result) {
    metrics_.inflight_requests -= 1;
    metrics_.inflight_questions -= questions;
    boost::asio::post(answer_thread_, [this, request, result = std::move(result)]() mutable {
      answer(*request, std::move(result));
    });
  };
  executor_.submit(request->prepared, std::move(ran), request->when);
}

// Answer, on the answer thread: the stage metrics, the logs and the response JSON.
void decision_engine::answer(request_in_flight& request, executor_actor::run_result result) {
  metrics_.observe_stage(stage::vision, result.seconds.vision);
  metrics_.observe_stage(stage::language, result.seconds.language);
  const auto& logits = result.logits;
  const bool dropped =  // the executor did not run it
      !logits && (logits.error().status == 503 || logits.error().status == 499);
  if (dropped)
    log_event(log_level::warning, "request_not_run",
              {{"request_id", request.request_id}, {"detail", logits.error().detail}});
  else if (!logits)
    log_event(log_level::error, "inference_failed",
              {{"request_id", request.request_id}, {"detail", logits.error().detail}});
  decision_response response =
      dropped ? not_run(logits.error())
              : assemble_response(options_.identity, *request.prepared, logits);
  response.pass = result.pass;
  const double total = std::chrono::duration<double>(clock::now() - request.received).count();
  metrics_.observe_stage(stage::total, total);
  if (!dropped) response.durations = durations_of(*request.prepared, result.seconds, total);
  request.finish(std::move(response));
}

outcome<bool> decision_engine::warm_up() {
  std::promise<decision_response> promise;
  auto future = promise.get_future();
  start(std::string(warmup_body), "warmup", nullptr,
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
