// For tests only: one question's whole prompt through the language forward alone, without a
// backend (tests/cuda_backend_test.cpp checks it against the CPU language model).
#pragma once

#include "gpu/language_forward.hpp"

namespace cua_s1::gpu {

// The whole prompt of `question` in one pass.
inline segment whole_prompt(const prepared_question& question) {
  return segment{0, {int64_t(question.input_ids.size())}, gdn_slot::none, gdn_slot::none, true};
}

// The whole prompt in one eager pass with a cache of its own; `question`'s letter logits to
// `logits` (device).
void enqueue_letter_logits(const forward_context& ctx, const model_config& config,
                           const device_language& weights, const prepared_question& question,
                           const float* image_features, int64_t image_rows, float* logits);

}  // namespace cua_s1::gpu
