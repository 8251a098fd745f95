// Bicubic resample passes (kernels/resize.hpp): one thread per output byte.
#include "kernels/common.cuh"
#include "kernels/resize.hpp"

namespace cua_s1::kernels {
namespace {

constexpr unsigned threads = 256;

__device__ __forceinline__ uint8_t round_clamp(int32_t sum, uint32_t precision) {
  const int32_t bias = precision == 0 ? 0 : int32_t{1} << (precision - 1);
  const int32_t v = (sum + bias) >> precision;  // arithmetic shift
  return uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Grid (output row, column blocks over dst_width * 3).
__global__ void horizontal_kernel(const uint8_t* src, uint32_t src_width, uint8_t* dst,
                                  uint32_t dst_width, resample_taps taps) {
  const uint32_t e = blockIdx.y * blockDim.x + threadIdx.x, y = blockIdx.x;
  if (e >= dst_width * 3) return;
  const uint32_t x = e / 3, c = e % 3;
  const uint8_t* in = src + size_t(y) * src_width * 3 + size_t(taps.first[x]) * 3 + c;
  const int16_t* k = taps.coeffs + size_t(x) * taps.taps;
  int32_t sum = 0;
  for (uint32_t t = 0; t < taps.count[x]; ++t) sum += int32_t(k[t]) * int32_t(in[3 * t]);
  dst[size_t(y) * dst_width * 3 + e] = round_clamp(sum, taps.precision);
}

// Grid (output row, column blocks over row_bytes).
__global__ void vertical_kernel(const uint8_t* src, uint32_t row_bytes, uint8_t* dst,
                                resample_taps taps) {
  const uint32_t i = blockIdx.y * blockDim.x + threadIdx.x, y = blockIdx.x;
  if (i >= row_bytes) return;
  const uint8_t* in = src + size_t(taps.first[y]) * row_bytes + i;
  const int16_t* k = taps.coeffs + size_t(y) * taps.taps;
  int32_t sum = 0;
  for (uint32_t t = 0; t < taps.count[y]; ++t) sum += int32_t(k[t]) * int32_t(in[size_t(t) * row_bytes]);
  dst[size_t(y) * row_bytes + i] = round_clamp(sum, taps.precision);
}

}  // namespace

void resample_horizontal(const uint8_t* src, uint32_t src_width, uint32_t rows, uint8_t* dst,
                         uint32_t dst_width, const resample_taps& taps, cudaStream_t stream) {
  if (rows == 0 || dst_width == 0) return;
  horizontal_kernel<<<dim3(rows, blocks_for(int64_t(dst_width) * 3, threads)), threads, 0,
                      stream>>>(src, src_width, dst, dst_width, taps);
  check_launch("resample_horizontal");
}

void resample_vertical(const uint8_t* src, uint32_t row_bytes, uint8_t* dst, uint32_t dst_rows,
                       const resample_taps& taps, cudaStream_t stream) {
  if (dst_rows == 0 || row_bytes == 0) return;
  vertical_kernel<<<dim3(dst_rows, blocks_for(row_bytes, threads)), threads, 0, stream>>>(
      src, row_bytes, dst, taps);
  check_launch("resample_vertical");
}

}  // namespace cua_s1::kernels
