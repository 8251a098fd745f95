// Bilinear position taps with torch.linspace's fp32 arithmetic.
#include "model/position_taps.hpp"

#include <algorithm>

namespace cua_s1 {
namespace {

// torch.linspace(0, end, steps) in fp32: the first half counts up from 0, the second half down
// from `end` (as the CPU kernel does), so the last value is exactly `end`.
std::vector<float> torch_linspace(float end, int64_t steps) {
  std::vector<float> out(size_t(steps), 0.0f);
  if (steps == 1) return out;
  const float step = end / float(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    out[size_t(i)] = i < halfway ? step * float(i) : end - step * float(steps - i - 1);
  return out;
}

}  // namespace

position_taps vision_position_taps(const grid_thw& grid, int64_t side, uint32_t merge) {
  const std::vector<float> ys = torch_linspace(float(side - 1), grid.h);
  const std::vector<float> xs = torch_linspace(float(side - 1), grid.w);
  const int64_t patches = int64_t(grid.h) * grid.w;
  const uint32_t block_cols = grid.w / merge;
  position_taps taps;
  taps.rows.resize(size_t(patches * 4));
  taps.weights.resize(size_t(patches * 4));
  for (int64_t n = 0; n < patches; ++n) {
    // Patch n in merge-blocked order sits at grid (r, c).
    const int64_t ic = n % merge, ir = (n / merge) % merge, block = n / (int64_t(merge) * merge);
    const int64_t r = (block / block_cols) * merge + ir, c = (block % block_cols) * merge + ic;
    const float y = ys[size_t(r)], x = xs[size_t(c)];
    const int64_t y0 = int64_t(y), x0 = int64_t(x);
    const int64_t y1 = std::min(y0 + 1, side - 1), x1 = std::min(x0 + 1, side - 1);
    const float dy = y - float(y0), dx = x - float(x0);
    const int64_t rows[4] = {y0 * side + x0, y0 * side + x1, y1 * side + x0, y1 * side + x1};
    const float weights[4] = {(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx};
    for (int tap = 0; tap < 4; ++tap) {
      taps.rows[size_t(n * 4 + tap)] = int32_t(rows[tap]);
      taps.weights[size_t(n * 4 + tap)] = weights[tap];
    }
  }
  return taps;
}

}  // namespace cua_s1
