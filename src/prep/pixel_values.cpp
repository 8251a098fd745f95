// Fused rescale + normalize and merge-block patch flattening, bit-identical to Transformers 5.17's
// torchvision backend (rescale_and_normalize + Qwen2VLImageProcessor.patchify).
#include "prep/pixel_values.hpp"

#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "prep/bicubic_resize.hpp"

namespace cua_s1 {
namespace {

using channel_table = std::array<float, 256>;

// Every value a byte can take, per channel. The backend fuses rescale into normalize with
// mean' = float32(mean) * 255 and std' = float32(std) * 255 computed in float32 (a float tensor
// times the Python scalar 1 / (1 / 255) == 255.0), then runs (x - mean') / std' in float32: a
// true division, not a multiply by the reciprocal.
std::array<channel_table, 3> normalization_tables(const processor_config& config) {
  std::array<channel_table, 3> tables{};
  for (int c = 0; c < 3; ++c) {
    const float mean = config.image_mean[c] * 255.0f;
    const float std = config.image_std[c] * 255.0f;
    for (int v = 0; v < 256; ++v) tables[c][v] = (static_cast<float>(v) - mean) / std;
  }
  return tables;
}

}  // namespace

grid_thw image_grid_thw(uint32_t width, uint32_t height, const processor_config& config) {
  return {1, height / config.patch_size, width / config.patch_size};
}

uint32_t patch_dim(const processor_config& config) {
  return 3 * config.temporal_patch_size * config.patch_size * config.patch_size;
}

namespace {

// Copies the frame of each channel over the remaining temporal positions of one patch row.
void repeat_frames(float* row, uint32_t plane, uint32_t channel_span, uint32_t temporal) {
  for (uint32_t c = 0; c < 3; ++c) {
    float* first = row + c * channel_span;
    for (uint32_t t = 1; t < temporal; ++t)
      std::memcpy(first + t * plane, first, plane * sizeof(float));
  }
}

#if defined(__SSE2__)
// 16 bytes -> 16 floats (x - mean) / std with IEEE single division (identical to the scalar
// operation), written to every temporal position.
template <bool streaming>
inline void normalize16(const uint8_t* src, __m128 mean, __m128 std, float* dst, uint32_t plane,
                        uint32_t temporal) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i lo = _mm_unpacklo_epi8(bytes, zero);
  const __m128i hi = _mm_unpackhi_epi8(bytes, zero);
  const __m128i q[4] = {_mm_unpacklo_epi16(lo, zero), _mm_unpackhi_epi16(lo, zero),
                        _mm_unpacklo_epi16(hi, zero), _mm_unpackhi_epi16(hi, zero)};
  for (int k = 0; k < 4; ++k) {
    const __m128 v = _mm_div_ps(_mm_sub_ps(_mm_cvtepi32_ps(q[k]), mean), std);
    for (uint32_t t = 0; t < temporal; ++t) {
      if constexpr (streaming) {
        _mm_stream_ps(dst + t * plane + 4 * k, v);
      } else {
        _mm_storeu_ps(dst + t * plane + 4 * k, v);
      }
    }
  }
}
#endif

}  // namespace

void write_pixel_values(const rgb_image& resized, const processor_config& config, float* out) {
  const uint32_t p = config.patch_size;
  const uint32_t m = config.merge_size;
  const uint32_t temporal = config.temporal_patch_size;
  const uint32_t plane = p * p;                    // floats per channel and frame
  const uint32_t channel_span = temporal * plane;  // floats per channel
  const uint32_t dim = 3 * channel_span;
  const grid_thw grid = image_grid_thw(resized.width, resized.height, config);
  const size_t width = resized.width;

#if defined(__SSE2__)
  if (p == 16) {
    // Planar copies let each 16-pixel patch row load as one vector per channel.
    const size_t area = width * resized.height;
    std::vector<uint8_t> planes(area * 3);
    for (size_t i = 0; i < area; ++i) {
      planes[i] = resized.pixels[3 * i];
      planes[area + i] = resized.pixels[3 * i + 1];
      planes[2 * area + i] = resized.pixels[3 * i + 2];
    }
    __m128 mean[3], std[3];
    for (int c = 0; c < 3; ++c) {
      mean[c] = _mm_set1_ps(config.image_mean[c] * 255.0f);
      std[c] = _mm_set1_ps(config.image_std[c] * 255.0f);
    }
    // Streaming stores skip reading the destination lines into cache: the output (tens of MB)
    // is written once and read later by the caller.
    const bool aligned = reinterpret_cast<uintptr_t>(out) % 16 == 0;
    for (uint32_t block_y = 0; block_y < grid.h / m; ++block_y)
      for (uint32_t block_x = 0; block_x < grid.w / m; ++block_x)
        for (uint32_t merge_y = 0; merge_y < m; ++merge_y)
          for (uint32_t merge_x = 0; merge_x < m; ++merge_x, out += dim) {
            const size_t y0 = static_cast<size_t>(block_y * m + merge_y) * p;
            const size_t x0 = static_cast<size_t>(block_x * m + merge_x) * p;
            for (uint32_t c = 0; c < 3; ++c) {
              const uint8_t* src = planes.data() + c * area + y0 * width + x0;
              float* dst = out + c * channel_span;
              for (uint32_t py = 0; py < p; ++py) {
                if (aligned) {
                  normalize16<true>(src + py * width, mean[c], std[c], dst + py * p, plane,
                                    temporal);
                } else {
                  normalize16<false>(src + py * width, mean[c], std[c], dst + py * p, plane,
                                     temporal);
                }
              }
            }
          }
    if (aligned) _mm_sfence();
    return;
  }
#endif

  const auto tables = normalization_tables(config);
  const size_t src_stride = width * 3;
  for (uint32_t block_y = 0; block_y < grid.h / m; ++block_y) {
    for (uint32_t block_x = 0; block_x < grid.w / m; ++block_x) {
      for (uint32_t merge_y = 0; merge_y < m; ++merge_y) {
        for (uint32_t merge_x = 0; merge_x < m; ++merge_x, out += dim) {
          const size_t y0 = static_cast<size_t>(block_y * m + merge_y) * p;
          const size_t x0 = static_cast<size_t>(block_x * m + merge_x) * p;
          float* r = out;
          float* g = out + channel_span;
          float* b = out + 2 * channel_span;
          for (uint32_t py = 0; py < p; ++py) {
            const uint8_t* src = resized.pixels.data() + (y0 + py) * src_stride + x0 * 3;
            for (uint32_t px = 0; px < p; ++px, src += 3) {
              r[py * p + px] = tables[0][src[0]];
              g[py * p + px] = tables[1][src[1]];
              b[py * p + px] = tables[2][src[2]];
            }
          }
          repeat_frames(out, plane, channel_span, temporal);
        }
      }
    }
  }
}

std::vector<float> make_pixel_values(const rgb_image& resized, const processor_config& config) {
  const grid_thw grid = image_grid_thw(resized.width, resized.height, config);
  std::vector<float> values(static_cast<size_t>(grid.h) * grid.w * patch_dim(config));
  write_pixel_values(resized, config, values.data());
  return values;
}

prepared_image preprocess_image(const rgb_image& image, const processor_config& config,
                                pixel_values_on where) {
  if (where == pixel_values_on::backend) return picture_for_backend(image, config);
  prepared_image prepared;
  prepared.resized = smart_resize(image.width, image.height, config);
  const uint32_t w = prepared.resized.width;
  const uint32_t h = prepared.resized.height;
  prepared.grid = image_grid_thw(w, h, config);
  if (w == image.width && h == image.height)
    prepared.pixel_values = make_pixel_values(image, config);
  else
    prepared.pixel_values = make_pixel_values(resize_bicubic_antialias(image, w, h), config);
  return prepared;
}

prepared_image picture_for_backend(rgb_image image, const processor_config& config) {
  prepared_image prepared;
  prepared.resized = smart_resize(image.width, image.height, config);
  prepared.grid = image_grid_thw(prepared.resized.width, prepared.resized.height, config);
  prepared.picture = std::move(image);
  pixel_normalization& n = prepared.normalization;
  for (int c = 0; c < 3; ++c) {
    n.mean[c] = config.image_mean[c] * 255.0f;
    n.std[c] = config.image_std[c] * 255.0f;
  }
  n.patch_size = config.patch_size;
  n.merge_size = config.merge_size;
  n.temporal_patch_size = config.temporal_patch_size;
  return prepared;
}

}  // namespace cua_s1
