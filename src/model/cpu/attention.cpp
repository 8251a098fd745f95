// Blocked attention: per head and block of query rows, scores by sgemm, exact softmax, P V by sgemm.
#include "model/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/cpu/gemm.hpp"

namespace cua_s1::cpu {

void attention_runner::run(const attention_shape& s, const float* q, int64_t ldq, const float* k,
                           int64_t ldk, const float* v, int64_t ldv, float* out, int64_t ldo) {
  const int64_t group = s.q_heads / s.kv_heads;
  const int64_t offset = s.kv_len - s.q_len;  // keys before the first query (a cached prefix)
  scores_.resize(size_t(std::min(block_rows_, s.q_len) * s.kv_len));
  for (int64_t h = 0; h < s.q_heads; ++h) {
    const int64_t kvh = h / group;
    const float* qh = q + h * s.head_dim;
    const float* kh = k + kvh * s.head_dim;
    const float* vh = v + kvh * s.head_dim;
    float* oh = out + h * s.head_dim;
    for (int64_t i0 = 0; i0 < s.q_len; i0 += block_rows_) {
      const int64_t rows = std::min(block_rows_, s.q_len - i0);
      const int64_t keys = s.causal ? std::min(s.kv_len, i0 + rows + offset) : s.kv_len;
      float* p = scores_.data();
      sgemm(rows, keys, s.head_dim, s.scale, qh + i0 * ldq, ldq, kh, ldk, true, 0.0f, p, keys);
      for (int64_t r = 0; r < rows; ++r) {
        float* row = p + r * keys;
        const int64_t visible = s.causal ? std::min(keys, i0 + r + offset + 1) : keys;
        float peak = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < visible; ++j) peak = std::max(peak, row[j]);
        double sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          row[j] = std::exp(row[j] - peak);
          sum += row[j];
        }
        const float inv = float(1.0 / sum);
        for (int64_t j = 0; j < visible; ++j) row[j] *= inv;
        std::fill(row + visible, row + keys, 0.0f);
      }
      sgemm(rows, s.head_dim, keys, 1.0f, p, keys, vh, ldv, false, 0.0f, oh + i0 * ldo, ldo);
    }
  }
}

}  // namespace cua_s1::cpu
