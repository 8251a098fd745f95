// One language prefill on the GPU (spec/model.md 4): fp32 residual stream, bf16 GEMM inputs,
// letter logits read from the last position only.
#pragma once

#include <compare>
#include <vector>

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "model/model_config.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1::gpu {

constexpr int64_t max_letters = 26;

// What the layer stack keeps for the next segment of the same prompt: per attention layer the
// K/V rows (bf16, after the k norm and rotary), per GDN layer the fp32 recurrent state and the
// last kernel - 1 conv inputs. Long-lived, so that captured graphs may point into it.
struct prompt_cache {
  int64_t capacity = 0;                            // K/V rows
  std::vector<device_buffer<bf16>> keys, values;   // per attention layer [capacity, kv_width]
  std::vector<device_buffer<float>> recurrent;     // per GDN layer [v_heads * v_dim, k_dim]
  std::vector<device_buffer<float>> conv_history;  // per GDN layer [kernel - 1, channels]
};
prompt_cache make_prompt_cache(const text_config& config, int64_t capacity, cudaStream_t stream);

// One pass of the layer stack over prompt positions [start, start + tokens). Attention layers
// write their K/V rows into the cache and read rows [0, start + tokens) from it.
struct segment {
  int64_t start = 0, tokens = 0;
  bool resume = false;   // GDN layers continue the cache's state (left by the pass before start)
  bool keep = false;     // GDN layers leave their state at the segment's end in the cache
  bool readout = true;   // letter logits of the segment's last position
  auto operator<=>(const segment&) const = default;
};

// The whole prompt of `question` in one pass.
inline segment whole_prompt(const prepared_question& question) {
  return segment{0, int64_t(question.input_ids.size()), false, false, true};
}

// Device inputs and outputs of the layer stack for one segment length; reused (and captured
// into a CUDA graph) while the segment stays the same.
struct language_buffers {
  int64_t tokens = 0;
  device_buffer<float> h;         // [tokens, hidden] residual stream, filled by the embedding
  device_buffer<float> cos, sin;  // [tokens, rotary_dim / 2]
  device_buffer<int32_t> letters;  // [26]
  device_buffer<float> logits;     // [26]
};

struct language_inputs {
  segment part;
  prompt_cache* cache = nullptr;
  float* h = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t half = 0;
  const int32_t* letters = nullptr;
  float* logits = nullptr;
};

// Enqueues the segment's uploads and embedding into `buffers` (reallocated when the length
// changes) and returns views of them. The cache must hold start + tokens rows.
language_inputs upload_language_inputs(const forward_context& ctx, const model_config& config,
                                       const device_language& weights,
                                       const prepared_question& question, const segment& part,
                                       const float* image_features, int64_t image_rows,
                                       prompt_cache& cache, language_buffers& buffers);

// The decoder layers and, when the segment reads out, the final norm and the 26-slot letter
// readout: no uploads and only stream-ordered allocations, so it can be captured into a graph.
void enqueue_layers_and_readout(const forward_context& ctx, const model_config& config,
                                const device_language& weights, const language_inputs& inputs);

// Enqueues the segment eagerly (image pads take the rows of `image_features` [image_rows,
// hidden]) and, when it reads out, writes question.letter_ids.size() fp32 logits to `logits`
// (device).
void enqueue_segment(const forward_context& ctx, const model_config& config,
                     const device_language& weights, const prepared_question& question,
                     const segment& part, const float* image_features, int64_t image_rows,
                     prompt_cache& cache, float* logits);

// Copies the question's letter logits of a segment that read out to `logits` (device).
void copy_letter_logits(const forward_context& ctx, const prepared_question& question,
                        const language_inputs& inputs, float* logits);

// The whole prompt in one eager pass with a cache of its own.
void enqueue_letter_logits(const forward_context& ctx, const model_config& config,
                           const device_language& weights, const prepared_question& question,
                           const float* image_features, int64_t image_rows, float* logits);

}  // namespace cua_s1::gpu
