// The request path: validate on the caller's thread, reserve capacity, prepare on the decode
// pool, run on the executor actor, assemble and complete.
#include "actors/decision_engine.hpp"

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

}  // namespace

decision_engine::decision_engine(boost::asio::any_io_executor io,
                                 std::shared_ptr<const request_preparer> preparer,
                                 std::unique_ptr<backend> model, engine_options options)
    : io_(std::move(io)),
      preparer_(std::move(preparer)),
      options_(std::move(options)),
      admission_(options_.limits),
      decode_pool_(options_.decode_threads),
      executor_(std::move(model)) {}

decision_engine::~decision_engine() { decode_pool_.join(); }

void decision_engine::start(std::string body, std::function<void(decision_response)> complete) {
  auto request = preparer_->parse(body);
  if (!request) return complete(error_response(request.error()));
  const size_t questions = request->questions.size();
  if (!admission_.try_reserve(questions)) {
    decision_response busy = error_response({503, "server at capacity, retry later"});
    busy.retry_after_seconds = 1;
    return complete(std::move(busy));
  }
  boost::asio::post(decode_pool_, [this, questions, request = std::move(*request),
                                   complete = std::move(complete)]() mutable {
    auto prepared = preparer_->prepare(std::move(request));
    if (!prepared) {
      admission_.release(questions);
      return complete(error_response(prepared.error()));
    }
    auto shared = std::make_shared<const prepared_request>(std::move(*prepared));
    executor_.submit(shared, [this, shared, questions, complete = std::move(complete)](
                                 outcome<std::vector<question_logits>> logits) {
      if (!logits) log_event(log_level::error, "inference_failed", {{"detail", logits.error().detail}});
      decision_response response = assemble_response(options_.identity, *shared, logits);
      admission_.release(questions);
      complete(std::move(response));
    });
  });
}

outcome<bool> decision_engine::warm_up() {
  std::promise<decision_response> promise;
  auto future = promise.get_future();
  start(warmup_body, [&promise](decision_response response) { promise.set_value(std::move(response)); });
  decision_response response = future.get();
  if (response.status != 200) return failure{500, "warmup decision failed: " + response.body};
  ready_ = true;
  return true;
}

}  // namespace cua_s1
