// CUDA graphs of the language layer stack, one per exact segment (start, run lengths, state flow), in
// a bounded LRU cache, over one long-lived prompt cache. A segment is captured on first use and
// replayed after that; a failed capture falls back to the eager path for that segment (logged
// once), and replay is bit-identical to eager. The cache keeps the prompt opening between requests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <set>
#include <span>

#include "common/lru_cache.hpp"
#include "gpu/cuda_graph.hpp"
#include "gpu/language_forward.hpp"

namespace cua_s1::gpu {

class language_graphs {
 public:
  // At most `capacity` graphs; 0: every segment runs eagerly.
  explicit language_graphs(size_t capacity) : graphs_(capacity) {}

  // As enqueue_segment on this object's prompt cache, through the cached graph of the segment
  // (eager when the capacity is 0 or the segment failed to capture).
  void enqueue(const forward_context& ctx, const model_config& config,
               const device_language& weights, std::span<const prepared_question* const> questions,
               const segment& part, const run_images& images, float* logits);

  // As enqueue, always eagerly: for segments unlikely to come again (several requests packed
  // into one pass), whose capture would cost more than it saves and evict graphs that return.
  void enqueue_eagerly(const forward_context& ctx, const model_config& config,
                       const device_language& weights,
                       std::span<const prepared_question* const> questions, const segment& part,
                       const run_images& images, float* logits);

  // Makes the prompt cache hold the K/V rows and GDN state (slot opening) of `question`'s first
  // `tokens` positions, the opening every request shares (prep/shared_prefix.hpp): runs them
  // only when the cache holds another opening or none. Segments that resume from the opening
  // start at `tokens`.
  void enqueue_opening(const forward_context& ctx, const model_config& config,
                       const device_language& weights, const prepared_question& question,
                       int64_t tokens, const run_images& images);

  // Grows the prompt cache to hold `rows` (at least 4096, the longest valid prompt); graphs and
  // the opening point into the old one, so growing drops them. Reserve a request's rows before
  // its opening.
  void reserve_rows(const text_config& config, int64_t rows, cudaStream_t stream);

  // Destroys every graph, its buffers and the prompt cache (before their stream goes).
  void clear();

 private:
  // Makes the prompt cache fit the segment and drops the opening it overwrites.
  void prepare_cache(const segment& part, const text_config& config, cudaStream_t stream);

  struct entry {
    language_buffers buffers;
    cuda_graph graph;  // destroyed before the buffers it reads
  };

  prompt_cache cache_;
  lru_cache<segment, entry> graphs_;
  std::set<segment> uncapturable_;
};

}  // namespace cua_s1::gpu
