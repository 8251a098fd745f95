// Stream capture of enqueue_layers_and_readout into per-length graphs, with LRU eviction.
#include "gpu/language_graphs.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "common/json_log.hpp"

namespace cua_s1::gpu {

language_graphs::~language_graphs() { clear(); }

void language_graphs::destroy_graphs() {
  for (auto& [part, e] : entries_)
    if (e.exec) cudaGraphExecDestroy(e.exec);  // freed on completion if still running
  entries_.clear();
  ages_.clear();
}

void language_graphs::clear() {
  destroy_graphs();
  cache_ = prompt_cache();
}

void language_graphs::reserve_rows(const text_config& config, int64_t rows, cudaStream_t stream) {
  if (rows <= cache_.capacity) return;
  destroy_graphs();
  cache_ = prompt_cache();  // freed stream-ordered, after the work that uses it
  cache_ = make_prompt_cache(config, std::max<int64_t>(rows, 4096), stream);
}

void language_graphs::evict_oldest() {
  const segment oldest = ages_.back();
  ages_.pop_back();
  auto found = entries_.find(oldest);
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
    return &fresh;
  } catch (const cuda_error& error) {
    if (error.sticky()) throw;
    cudaGetLastError();  // a failed capture leaves a non-sticky error behind
    log_event(log_level::warning, "cuda_graph_capture_failed",
              {{"start", inputs.part.start}, {"tokens", inputs.part.tokens()},
               {"runs", inputs.part.lengths.size()},
               {"detail", std::string_view(error.what())},
               {"fallback", "eager"}});
    return nullptr;
  }
}

void language_graphs::enqueue_opening(const forward_context& ctx, const model_config& config,
                                      const device_language& weights,
                                      const prepared_question& question, int64_t tokens,
                                      const float* image_features, int64_t image_rows) {
  if (tokens <= 0 || size_t(tokens) >= question.input_ids.size())
    throw std::invalid_argument("the opening must leave the question a token to read out");
  const std::vector<int32_t> ids(question.input_ids.begin(), question.input_ids.begin() + tokens);
  if (cache_.opening == ids) return;
  const segment opening{0, {tokens}, gdn_slot::none, gdn_slot::opening, false};
  enqueue(ctx, config, weights, std::span(&question, 1), opening, image_features, image_rows,
          nullptr);
  cache_.opening = ids;  // after the enqueue: a failed one leaves no opening behind
}

void language_graphs::enqueue(const forward_context& ctx, const model_config& config,
                              const device_language& weights,
                              std::span<const prepared_question> questions, const segment& part,
                              const float* image_features, int64_t image_rows, float* logits) {
  reserve_rows(config.text, part.start + part.tokens(), ctx.stream);
  if (part.resume == gdn_slot::opening && size_t(part.start) != cache_.opening.size())
    throw std::logic_error("the segment resumes from an opening the prompt cache does not hold");
  // A segment overwriting the opening's K/V rows or GDN state ends it.
  if (part.start < int64_t(cache_.opening.size()) || part.keep == gdn_slot::opening)
    cache_.opening.clear();
  if (capacity_ == 0 || ctx.probing() || uncapturable_.count(part))
    return enqueue_segment(ctx, config, weights, questions, part, image_features, image_rows,
                           cache_, logits);

  auto found = entries_.find(part);
  entry* e = nullptr;
  if (found != entries_.end()) {
    e = &found->second;
    ages_.erase(e->age);
  } else {
    if (entries_.size() >= capacity_) evict_oldest();
    e = &entries_[part];
  }
  ages_.push_front(part);
  e->age = ages_.begin();

  const language_inputs inputs = upload_language_inputs(ctx, config, weights, questions, part,
                                                        image_features, image_rows, cache_,
                                                        e->buffers);
  if (!e->exec && !capture(ctx, config, weights, inputs, *e)) {
    uncapturable_.insert(part);
    ages_.erase(e->age);
    entries_.erase(part);
    return enqueue_segment(ctx, config, weights, questions, part, image_features, image_rows,
                           cache_, logits);
  }
  check_cuda(cudaGraphLaunch(e->exec, ctx.stream), "cudaGraphLaunch");
  copy_letter_logits(ctx, questions, inputs, logits);
}

}  // namespace cua_s1::gpu
