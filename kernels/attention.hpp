// The softmax step of GEMM-based attention: scores in fp32, probabilities rounded to bf16 for
// the P V product (as flash attention rounds P).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// For `batches` x `rows` rows of scores (row r of batch b at scores[(b * rows + r) * ld_scores]),
// keys [0, keys): p = softmax(scale * s) over the keys row r may see (all, or j <= first_row + r
// when causal), written as bf16 to probs[(b * rows + r) * ld_probs + j] for j < ld_probs (masked
// and padding columns get 0).
struct softmax_args {
  const float* scores = nullptr;
  int64_t ld_scores = 0;
  __nv_bfloat16* probs = nullptr;
  int64_t ld_probs = 0;
  int64_t batches = 0, rows = 0, keys = 0;  // rows: the batch stride in rows
  int64_t valid_rows = 0;                     // rows >= valid_rows are skipped
  float scale = 1.0f;
  bool causal = false;
  int64_t first_row = 0;  // global query index of row 0 (causal)
};
void softmax_to_bf16(const softmax_args& args, cudaStream_t stream);

}  // namespace cua_s1::kernels
