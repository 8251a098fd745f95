// Stream capture of enqueue_layers_and_readout into per-length graphs, with LRU eviction.
#include "gpu/language_graphs.hpp"

#include <exception>

#include "common/json_log.hpp"

namespace cua_s1::gpu {

language_graphs::~language_graphs() { clear(); }

void language_graphs::clear() {
  for (auto& [tokens, e] : entries_)
    if (e.exec) cudaGraphExecDestroy(e.exec);  // freed on completion if still running
  entries_.clear();
  ages_.clear();
}

void language_graphs::evict_oldest() {
  const int64_t tokens = ages_.back();
  ages_.pop_back();
  auto found = entries_.find(tokens);
  if (found->second.exec) cudaGraphExecDestroy(found->second.exec);
  entries_.erase(found);
}

language_graphs::entry* language_graphs::capture(const forward_context& ctx,
                                                 const model_config& config,
                                                 const device_language& weights,
                                                 const language_inputs& inputs, entry& fresh) {
  cudaGraph_t graph = nullptr;
  try {
    check_cuda(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    try {
      enqueue_layers_and_readout(ctx, config, weights, inputs);
    } catch (...) {
      cudaStreamEndCapture(ctx.stream, &graph);  // ends the (invalidated) capture
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check_cuda(cudaStreamEndCapture(ctx.stream, &graph), "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&fresh.exec, graph, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graph);
    ++captures_;
    return &fresh;
  } catch (const cuda_error& error) {
    if (error.sticky()) throw;
    cudaGetLastError();  // a failed capture leaves a non-sticky error behind
    log_event(log_level::warning, "cuda_graph_capture_failed",
              {{"tokens", inputs.tokens}, {"detail", std::string_view(error.what())},
               {"fallback", "eager"}});
    return nullptr;
  }
}

void language_graphs::enqueue(const forward_context& ctx, const model_config& config,
                              const device_language& weights, const prepared_question& question,
                              const float* image_features, int64_t image_rows, float* logits) {
  const int64_t tokens = int64_t(question.input_ids.size());
  if (capacity_ == 0 || ctx.probing() || uncapturable_.count(tokens))
    return enqueue_letter_logits(ctx, config, weights, question, image_features, image_rows, logits);

  auto found = entries_.find(tokens);
  entry* e = nullptr;
  if (found != entries_.end()) {
    e = &found->second;
    ages_.erase(e->age);
  } else {
    if (entries_.size() >= capacity_) evict_oldest();
    e = &entries_[tokens];
  }
  ages_.push_front(tokens);
  e->age = ages_.begin();

  const language_inputs inputs =
      upload_language_inputs(ctx, config, weights, question, image_features, image_rows, e->buffers);
  if (!e->exec && !capture(ctx, config, weights, inputs, *e)) {
    uncapturable_.insert(tokens);
    ages_.erase(e->age);
    entries_.erase(tokens);
    return enqueue_letter_logits(ctx, config, weights, question, image_features, image_rows, logits);
  }
  check_cuda(cudaGraphLaunch(e->exec, ctx.stream), "cudaGraphLaunch");
  ++replays_;
  check_cuda(cudaMemcpyAsync(logits, inputs.logits, question.letter_ids.size() * sizeof(float),
                             cudaMemcpyDeviceToDevice, ctx.stream),
             "cudaMemcpyAsync (logits)");
}

}  // namespace cua_s1::gpu
