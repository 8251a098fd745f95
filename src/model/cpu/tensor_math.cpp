// bf16 widening and fp32 copies of small weight tensors.
#include "model/cpu/tensor_math.hpp"

namespace cua_s1::cpu {

void bf16_to_float(const uint16_t* source, float* target, size_t count) {
  auto* out = reinterpret_cast<uint32_t*>(target);
  for (size_t i = 0; i < count; ++i) out[i] = uint32_t(source[i]) << 16;  // vectorises
}

int64_t element_count(const tensor_view& view) {
  int64_t count = 1;
  for (int64_t extent : view.shape) count *= extent;
  return count;
}

void copy_rows_f32(const tensor_view& view, int64_t columns, int64_t row_begin, int64_t row_end,
                   float* target) {
  const size_t count = size_t(row_end - row_begin) * size_t(columns);
  const size_t offset = size_t(row_begin) * size_t(columns);
  if (view.type == tensor_view::dtype::bf16)
    bf16_to_float(view.bf16() + offset, target, count);
  else
    std::memcpy(target, view.f32() + offset, count * sizeof(float));
}

std::vector<float> to_floats(const tensor_view& view) {
  const int64_t count = element_count(view);
  std::vector<float> out(static_cast<size_t>(count));
  copy_rows_f32(view, count, 0, 1, out.data());
  return out;
}

}  // namespace cua_s1::cpu
