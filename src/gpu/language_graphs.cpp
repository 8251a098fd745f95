// The language layer stack captured into per-segment graphs (cuda_graph), kept in an LRU cache.
#include "gpu/language_graphs.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/json_log.hpp"

namespace cua_s1::gpu {

void language_graphs::clear() {
  graphs_.clear();
  cache_ = prompt_cache();
}

void language_graphs::reserve_rows(const text_config& config, int64_t rows, cudaStream_t stream) {
  if (rows <= cache_.capacity) return;
  graphs_.clear();
  cache_ = prompt_cache();  // freed stream-ordered, after the work that uses it
  cache_ = make_prompt_cache(config, std::max<int64_t>(rows, 4096), stream);
}

void language_graphs::enqueue_opening(const forward_context& ctx, const model_config& config,
                                      const device_language& weights,
                                      const prepared_question& question, int64_t tokens,
                                      const run_images& images) {
  if (tokens <= 0 || size_t(tokens) >= question.input_ids.size())
    throw std::invalid_argument("the opening must leave the question a token to read out");
  const std::vector<int32_t> ids(question.input_ids.begin(), question.input_ids.begin() + tokens);
  if (cache_.opening == ids) return;
  const segment opening{0, {tokens}, gdn_slot::none, gdn_slot::opening, false};
  const prepared_question* const one[] = {&question};
  enqueue(ctx, config, weights, one, opening, images, nullptr);
  cache_.opening = ids;  // after the enqueue: a failed one leaves no opening behind
}

void language_graphs::prepare_cache(const segment& part, const text_config& config,
                                    cudaStream_t stream) {
  reserve_rows(config, part.start + part.tokens(), stream);
  if (part.resume == gdn_slot::opening && size_t(part.start) != cache_.opening.size())
    throw std::logic_error("the segment resumes from an opening the prompt cache does not hold");
  // A segment overwriting the opening's K/V rows or GDN state ends it.
  if (part.start < int64_t(cache_.opening.size()) || part.keep == gdn_slot::opening)
    cache_.opening.clear();
}

void language_graphs::enqueue_eagerly(const forward_context& ctx, const model_config& config,
                                      const device_language& weights,
                                      std::span<const prepared_question* const> questions,
                                      const segment& part, const run_images& images,
                                      float* logits) {
  prepare_cache(part, config.text, ctx.stream);
  enqueue_segment(ctx, config, weights, questions, part, images, cache_, logits);
}

void language_graphs::enqueue(const forward_context& ctx, const model_config& config,
                              const device_language& weights,
                              std::span<const prepared_question* const> questions,
                              const segment& part, const run_images& images, float* logits) {
  prepare_cache(part, config.text, ctx.stream);
  if (graphs_.capacity() == 0 || uncapturable_.count(part))
    return enqueue_segment(ctx, config, weights, questions, part, images, cache_, logits);

  entry* e = graphs_.find(part);
  if (!e) e = &graphs_.emplace(part, [] { return entry{}; });
  const language_inputs inputs =
      upload_language_inputs(ctx, config, weights, questions, part, images, cache_, e->buffers);
  if (!e->graph) {
    outcome<cuda_graph> captured = cuda_graph::capture(
        ctx.stream, [&] { enqueue_layers_and_readout(ctx, config, weights, inputs); });
    if (!captured) {
      log_event(log_level::warning, "cuda_graph_capture_failed",
                {{"start", inputs.part.start}, {"tokens", inputs.part.tokens()},
                 {"runs", inputs.part.lengths.size()},
                 {"detail", std::string_view(captured.error().detail)},
                 {"fallback", "eager"}});
      uncapturable_.insert(part);
      graphs_.erase(part);
      return enqueue_segment(ctx, config, weights, questions, part, images, cache_, logits);
    }
    e->graph = std::move(*captured);
  }
  e->graph.launch(ctx.stream);
  copy_letter_logits(ctx, questions, inputs, logits);
}

}  // namespace cua_s1::gpu
