// Rotary tables and the rotate-half rotation in fp32.
#include "model/rope.hpp"

#include <cmath>

namespace cua_s1 {

std::vector<float> inverse_frequencies(double theta, int64_t dim) {
  std::vector<float> out(size_t(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = float(2 * i) / float(dim);
    out[size_t(i)] = 1.0f / std::pow(float(theta), exponent);
  }
  return out;
}

rotary_table vision_rotary(uint32_t grid_h, uint32_t grid_w, uint32_t merge, int64_t head_dim,
                           double theta) {
  const int64_t half = head_dim / 2;
  const std::vector<float> freq = inverse_frequencies(theta, half);  // head_dim / 4 values
  const int64_t quarter = int64_t(freq.size());
  rotary_table table;
  table.rows = int64_t(grid_h) * grid_w;
  table.half = half;
  table.cos.resize(size_t(table.rows * half));
  table.sin.resize(size_t(table.rows * half));
  const uint32_t block_cols = grid_w / merge;
  for (int64_t n = 0; n < table.rows; ++n) {
    // n = ((br * block_cols + bc) * merge + ir) * merge + ic
    const int64_t ic = n % merge, ir = (n / merge) % merge, block = n / (int64_t(merge) * merge);
    const int64_t br = block / block_cols, bc = block % block_cols;
    const float row = float(br * merge + ir), col = float(bc * merge + ic);
    for (int64_t j = 0; j < half; ++j) {
      const float angle = j < quarter ? row * freq[size_t(j)] : col * freq[size_t(j - quarter)];
      table.cos[size_t(n * half + j)] = std::cos(angle);
      table.sin[size_t(n * half + j)] = std::sin(angle);
    }
  }
  return table;
}

int mrope_axis(int64_t slot, const std::array<uint32_t, 3>& section) {
  if (slot % 3 == 1 && slot < 3 * int64_t(section[1])) return 1;
  if (slot % 3 == 2 && slot < 3 * int64_t(section[2])) return 2;
  return 0;
}

rotary_table text_rotary(const mrope_positions& positions, int64_t rotary_dim, double theta,
                         const std::array<uint32_t, 3>& section) {
  const int64_t half = rotary_dim / 2;
  const std::vector<float> freq = inverse_frequencies(theta, rotary_dim);
  rotary_table table;
  table.rows = int64_t(positions.axes[0].size());
  table.half = half;
  table.cos.resize(size_t(table.rows * half));
  table.sin.resize(size_t(table.rows * half));
  for (int64_t t = 0; t < table.rows; ++t)
    for (int64_t i = 0; i < half; ++i) {
      const float pos = float(positions.axes[size_t(mrope_axis(i, section))][size_t(t)]);
      const float angle = pos * freq[size_t(i)];
      table.cos[size_t(t * half + i)] = std::cos(angle);
      table.sin[size_t(t * half + i)] = std::sin(angle);
    }
  return table;
}

void apply_rotate_half(float* x, int64_t half, const float* cos, const float* sin) {
  for (int64_t d = 0; d < half; ++d) {
    const float lo = x[d], hi = x[d + half];
    x[d] = lo * cos[d] - hi * sin[d];
    x[d + half] = hi * cos[d] + lo * sin[d];
  }
}

}  // namespace cua_s1
