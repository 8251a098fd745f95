// Small shared helpers of the CPU backend: bf16 -> fp32 conversion and fp32 copies of small tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/model_weights.hpp"

namespace cua_s1::cpu {

inline float bf16_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Widens n bf16 values to fp32 (exact).
void bf16_to_float(const uint16_t* source, float* target, size_t count);

// Number of elements of a view (product of its shape), without the loader's helper.
int64_t element_count(const tensor_view& view);

// Copies rows [row_begin, row_end) of a 2-D bf16 or f32 view of `columns` columns into fp32.
void copy_rows_f32(const tensor_view& view, int64_t columns, int64_t row_begin, int64_t row_end,
                   float* target);

// The whole (small) tensor in fp32: norm weights, biases, gates. Not for matrices.
std::vector<float> to_floats(const tensor_view& view);

}  // namespace cua_s1::cpu
