// The Qwen3.5 text model of spec/model.md section 4 in fp32: one prefill per question, letter
// logits read from the last position only.
#pragma once

#include <vector>

#include "model/cpu/gemm.hpp"
#include "model/stage_probe.hpp"
#include "model/model_weights.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1::cpu {

class language_model {
 public:
  language_model(const model_weights& weights, unsigned threads);

  // Logits of question.letter_ids after a prefill of question.input_ids in which the image pads
  // take the rows of `image_features` [pads, hidden] in order.
  std::vector<float> letter_logits(const prepared_question& question,
                                   const std::vector<float>& image_features,
                                   const stage_probe* probe);

 private:
  std::vector<float> embed(const prepared_question& question,
                           const std::vector<float>& image_features) const;
  void run_mlp(const decoder_layer_weights& layer, const float* x, int64_t tokens, float* out);

  const model_weights& weights_;
  unsigned threads_;
  gemm_engine gemm_;
};

}  // namespace cua_s1::cpu
