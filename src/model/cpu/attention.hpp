// Scaled dot-product attention in fp32, blocked over query rows so scores never exceed
// block_rows x kv_len floats per call (no T x T x heads buffer).
#pragma once

#include <cstdint>
#include <vector>

namespace cua_s1::cpu {

struct attention_shape {
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // q head h reads kv head h / (q_heads / kv_heads) (GQA)
  int64_t head_dim = 0;
  float scale = 1.0f;
  bool causal = false;   // query i sees keys j <= i + (kv_len - q_len)
};

// Head h of row t lives at x[t * ld + h * head_dim]. out has q_heads * head_dim columns.
class attention_runner {
 public:
  explicit attention_runner(int64_t block_rows = 128) : block_rows_(block_rows) {}

  void run(const attention_shape& shape, const float* q, int64_t ldq, const float* k,
           int64_t ldk, const float* v, int64_t ldv, float* out, int64_t ldo);

 private:
  int64_t block_rows_;
  std::vector<float> scores_;
};

}  // namespace cua_s1::cpu
