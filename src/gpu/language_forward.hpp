// One language prefill on the GPU (spec/model.md 4): fp32 residual stream, bf16 GEMM inputs,
// letter logits read from the last position only.
#pragma once

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "model/model_config.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1::gpu {

// Enqueues the prefill of `question` (image pads take the rows of `image_features`
// [image_rows, hidden]) and writes question.letter_ids.size() fp32 logits to `logits` (device).
void enqueue_letter_logits(const forward_context& ctx, const model_config& config,
                           const device_language& weights, const prepared_question& question,
                           const float* image_features, int64_t image_rows, float* logits);

}  // namespace cua_s1::gpu
