// CUDA graphs of the language layer stack, one per exact prompt length, in a bounded LRU cache.
// A length is captured on first use and replayed after that; a failed capture falls back to the
// eager path for that length (logged once), and replay is bit-identical to eager.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <list>
#include <map>
#include <set>

#include "gpu/language_forward.hpp"

namespace cua_s1::gpu {

class language_graphs {
 public:
  explicit language_graphs(size_t capacity) : capacity_(capacity) {}
  ~language_graphs();
  language_graphs(const language_graphs&) = delete;
  language_graphs& operator=(const language_graphs&) = delete;

  // As enqueue_letter_logits, through the cached graph of the prompt's length (eager when the
  // cache is disabled, a probe is set, or the length failed to capture).
  void enqueue(const forward_context& ctx, const model_config& config,
               const device_language& weights, const prepared_question& question,
               const float* image_features, int64_t image_rows, float* logits);

  // Destroys every graph and its buffers (before the stream they were made on goes).
  void clear();

  size_t size() const { return entries_.size(); }
  size_t captures() const { return captures_; }
  size_t replays() const { return replays_; }

 private:
  struct entry {
    language_buffers buffers;
    cudaGraphExec_t exec = nullptr;
    std::list<int64_t>::iterator age;
  };
  entry* capture(const forward_context& ctx, const model_config& config,
                 const device_language& weights, const language_inputs& inputs, entry& fresh);
  void evict_oldest();

  size_t capacity_;
  std::map<int64_t, entry> entries_;
  std::list<int64_t> ages_;      // most recently used first
  std::set<int64_t> uncapturable_;
  size_t captures_ = 0, replays_ = 0;
};

}  // namespace cua_s1::gpu
