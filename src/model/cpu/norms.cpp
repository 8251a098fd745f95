// LayerNorm and RMSNorm variants; reductions accumulate in double, results are fp32.
#include "model/cpu/norms.hpp"

#include <cmath>

#include "model/cpu/activations.hpp"

namespace cua_s1::cpu {

namespace {

float inverse_rms(const float* x, int64_t dim, float eps) {
  double sum = 0;
  for (int64_t i = 0; i < dim; ++i) sum += double(x[i]) * double(x[i]);
  const float mean = float(sum / double(dim));
  return 1.0f / std::sqrt(mean + eps);
}

}  // namespace

void layer_norm(const float* x, int64_t rows, int64_t dim, const float* weight, const float* bias,
                float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * dim;
    float* target = out + r * dim;
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += row[i];
    const double mean = sum / double(dim);
    double squares = 0;
    for (int64_t i = 0; i < dim; ++i) squares += (row[i] - mean) * (row[i] - mean);
    const float inv = float(1.0 / std::sqrt(squares / double(dim) + double(eps)));
    const float m = float(mean);
    for (int64_t i = 0; i < dim; ++i) target[i] = (row[i] - m) * inv * weight[i] + bias[i];
  }
}

void rms_norm(const float* x, int64_t rows, int64_t dim, int64_t stride, const float* weight,
              bool zero_centred, float eps, float* out, int64_t out_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * stride;
    float* target = out + r * out_stride;
    const float inv = inverse_rms(row, dim, eps);
    for (int64_t i = 0; i < dim; ++i) {
      const float scale = zero_centred ? 1.0f + weight[i] : weight[i];
      target[i] = (row[i] * inv) * scale;
    }
  }
}

void gated_rms_norm(const float* o, const float* z, int64_t rows, int64_t dim, const float* weight,
                    float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = o + r * dim;
    const float* gate = z + r * dim;
    float* target = out + r * dim;
    const float inv = inverse_rms(row, dim, eps);
    for (int64_t i = 0; i < dim; ++i) target[i] = (row[i] * inv) * weight[i] * silu(gate[i]);
  }
}

}  // namespace cua_s1::cpu
