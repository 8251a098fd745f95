// A question's whole prompt through the language forward, for the tests.
#include "gpu/language_forward_testing.hpp"

namespace cua_s1::gpu {

void enqueue_letter_logits(const forward_context& ctx, const model_config& model,
                           const device_language& weights, const prepared_question& question,
                           const float* image_features, int64_t image_rows, float* logits) {
  prompt_cache cache =
      make_prompt_cache(model.text, int64_t(question.input_ids.size()), ctx.stream);
  const prepared_question* const one[] = {&question};
  enqueue_segment(ctx, model, weights, one, whole_prompt(question),
                  one_image(image_features, image_rows), cache, logits);
}

}  // namespace cua_s1::gpu
