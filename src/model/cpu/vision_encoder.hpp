// The vision encoder of spec/model.md section 3 in fp32: patch embedding, interpolated position
// embedding, 2-D rotary, the blocks (LoRA on fc1/fc2) and the patch merger.
#pragma once

#include <vector>

#include "model/cpu/gemm.hpp"
#include "model/stage_probe.hpp"
#include "model/model_weights.hpp"
#include "prep/pixel_values.hpp"

namespace cua_s1::cpu {

class vision_encoder {
 public:
  vision_encoder(const model_weights& weights, unsigned threads);

  // Image features [grid.h * grid.w / merge^2, out_hidden], row-major, in merged raster order.
  std::vector<float> encode(const prepared_image& image, const stage_probe* probe);

 private:
  std::vector<float> position_embeddings(const grid_thw& grid) const;  // [N, hidden]
  void run_block(const vision_block_weights& block, const grid_thw& grid, std::vector<float>& x);

  const model_weights& weights_;
  gemm_engine gemm_;
};

}  // namespace cua_s1::cpu
