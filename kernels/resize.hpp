// The antialiased bicubic resize of 8-bit RGB pictures on the GPU: the integer arithmetic of
// prep/bicubic_resize (int16 taps, int32 sums, rounding bias, arithmetic shift, clamp), so the
// result is bit-identical to resize_bicubic_antialias.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cua_s1::kernels {

// One axis's taps on the device, as prep/bicubic_resize's resample_axis: output i reads count[i]
// samples from first[i] on, weighted by coeffs[i * taps + t] / 2^precision.
struct resample_taps {
  const uint32_t* first = nullptr;
  const uint32_t* count = nullptr;
  const int16_t* coeffs = nullptr;
  uint32_t taps = 0, precision = 0;
};

// dst [rows, dst_width, 3] from src [rows, src_width, 3], along the rows.
void resample_horizontal(const uint8_t* src, uint32_t src_width, uint32_t rows, uint8_t* dst,
                         uint32_t dst_width, const resample_taps& taps, cudaStream_t stream);

// dst [dst_rows, row_bytes] from src [src rows, row_bytes], along the columns.
void resample_vertical(const uint8_t* src, uint32_t row_bytes, uint8_t* dst, uint32_t dst_rows,
                       const resample_taps& taps, cudaStream_t stream);

}  // namespace cua_s1::kernels
