// One language prefill on the GPU (spec/model.md 4): fp32 residual stream, bf16 GEMM inputs,
// letter logits read from the last position only.
#pragma once

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "model/model_config.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1::gpu {

constexpr int64_t max_letters = 26;

// Device inputs and outputs of the layer stack for one prompt length; reused (and captured into
// a CUDA graph) while the length stays the same.
struct language_buffers {
  int64_t tokens = 0;
  device_buffer<float> h;         // [tokens, hidden] residual stream, filled by the embedding
  device_buffer<float> cos, sin;  // [tokens, rotary_dim / 2]
  device_buffer<int32_t> letters;  // [26]
  device_buffer<float> logits;     // [26]
};

struct language_inputs {
  int64_t tokens = 0;
  float* h = nullptr;
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t half = 0;
  const int32_t* letters = nullptr;
  float* logits = nullptr;
};

// Enqueues the question's uploads and embedding into `buffers` (reallocated when the length
// changes) and returns views of them.
language_inputs upload_language_inputs(const forward_context& ctx, const model_config& config,
                                       const device_language& weights,
                                       const prepared_question& question,
                                       const float* image_features, int64_t image_rows,
                                       language_buffers& buffers);

// The decoder layers, final norm and the 26-slot letter readout: no uploads and only
// stream-ordered allocations, so it can be captured into a CUDA graph.
void enqueue_layers_and_readout(const forward_context& ctx, const model_config& config,
                                const device_language& weights, const language_inputs& inputs);

// Enqueues the prefill of `question` eagerly (image pads take the rows of `image_features`
// [image_rows, hidden]) and writes question.letter_ids.size() fp32 logits to `logits` (device).
void enqueue_letter_logits(const forward_context& ctx, const model_config& config,
                           const device_language& weights, const prepared_question& question,
                           const float* image_features, int64_t image_rows, float* logits);

}  // namespace cua_s1::gpu
