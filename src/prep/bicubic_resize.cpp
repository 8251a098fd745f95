// Antialiased bicubic resize of RGB8 pictures reproducing PyTorch 2.14's AVX2 uint8 kernel
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp and UpSampleKernelAVXAntialias.h) bit for bit.
#include "prep/bicubic_resize.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The float64 weight arithmetic below must round exactly where the reference rounds: its fused
// multiply-adds are written out with std::fma, and the compiler must not fuse anything else.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace cua_s1 {
namespace {

// Keys cubic kernel with a = -0.5 (HelperInterpCubic::aa_filter<double, true>). The reference
// build (GCC, -mavx2 -mfma) contracts the Horner steps into these fused multiply-adds.
double keys_cubic(double x) {
  x = std::fabs(x);
  if (x < 1.0) {
    // ((a + 2) * x - (a + 3)) * x * x + 1
    const double t = std::fma(1.5, x, -2.5);
    return std::fma(x, x * t, 1.0);
  }
  if (x < 2.0) {
    // ((a * x - 5a) * x + 8a) * x - 4a
    const double t = std::fma(x, -0.5, 2.5);
    const double u = std::fma(x, t, -4.0);
    return std::fma(x, u, 2.0);
  }
  return 0.0;
}

// Fixed-point precision: the largest shift below 22 that keeps the largest weight, doubled, under
// 2^15 after rounding (the loop of _compute_index_ranges_int16_weights).
uint32_t weights_precision(double max_weight) {
  uint32_t precision = 0;
  for (; precision < 22; ++precision) {
    const int next = static_cast<int>(0.5 + max_weight * static_cast<double>(1 << (precision + 1)));
    if (next >= (1 << 15)) break;
  }
  return precision;
}

// Rounds half away from zero by truncation, as the reference converts scaled weights to int16.
int16_t quantize(double weight, uint32_t precision) {
  const double v = weight * static_cast<double>(1 << precision);
  const int q = v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v);
  return static_cast<int16_t>(q);
}

// Half of the fixed-point unit, added before the final shift (1 << (precision - 1)).
inline int32_t rounding_bias(uint32_t precision) {
  return precision == 0 ? 0 : int32_t{1} << (precision - 1);
}

inline uint8_t clamp_shift(int32_t acc, uint32_t precision) {
  const int32_t v = acc >> precision;  // arithmetic shift, as _mm_srai_epi32
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Horizontal pass over `rows` rows of RGB pixels: src rows are src_width pixels, dst rows are
// axis.first.size() pixels.
void resample_horizontal(const uint8_t* src, uint32_t src_width, uint32_t rows, uint8_t* dst,
                         const resample_axis& axis) {
  const uint32_t dst_width = static_cast<uint32_t>(axis.first.size());
  const int32_t bias = rounding_bias(axis.precision);
  const size_t src_stride = static_cast<size_t>(src_width) * 3;
  const size_t dst_stride = static_cast<size_t>(dst_width) * 3;
#if defined(__SSE2__)
  // One padded copy of the row lets every tap load 4 bytes (R, G, B and one spare) safely.
  std::vector<uint8_t> padded(src_stride + 4, 0);
  const __m128i zero = _mm_setzero_si128();
  const __m128i bias4 = _mm_set1_epi32(bias);
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(axis.precision));
#endif
  for (uint32_t y = 0; y < rows; ++y) {
    const uint8_t* in = src + y * src_stride;
    uint8_t* out = dst + y * dst_stride;
#if defined(__SSE2__)
    std::memcpy(padded.data(), in, src_stride);
    in = padded.data();
#endif
    for (uint32_t x = 0; x < dst_width; ++x) {
      const int16_t* k = axis.coeffs.data() + static_cast<size_t>(x) * axis.taps;
      const uint8_t* p = in + static_cast<size_t>(axis.first[x]) * 3;
      const uint32_t n = axis.count[x];
#if defined(__SSE2__)
      // int16 lanes (R_t, R_t+1, G_t, G_t+1, B_t, B_t+1, -, -) times (w_t, w_t+1) pairs.
      __m128i acc = bias4;
      uint32_t t = 0;
      for (; t + 1 < n; t += 2, p += 6) {
        int32_t a, b;
        std::memcpy(&a, p, 4);
        std::memcpy(&b, p + 3, 4);
        const __m128i pair =
            _mm_unpacklo_epi8(_mm_unpacklo_epi8(_mm_cvtsi32_si128(a), _mm_cvtsi32_si128(b)), zero);
        const uint32_t w = static_cast<uint16_t>(k[t]) |
                           (static_cast<uint32_t>(static_cast<uint16_t>(k[t + 1])) << 16);
        acc = _mm_add_epi32(acc, _mm_madd_epi16(pair, _mm_set1_epi32(static_cast<int>(w))));
      }
      if (t < n) {
        int32_t a;
        std::memcpy(&a, p, 4);
        const __m128i single =
            _mm_unpacklo_epi8(_mm_unpacklo_epi8(_mm_cvtsi32_si128(a), zero), zero);
        const uint32_t w = static_cast<uint16_t>(k[t]);
        acc = _mm_add_epi32(acc, _mm_madd_epi16(single, _mm_set1_epi32(static_cast<int>(w))));
      }
      acc = _mm_sra_epi32(acc, shift);
      acc = _mm_packs_epi32(acc, acc);
      acc = _mm_packus_epi16(acc, acc);
      const int32_t rgbx = _mm_cvtsi128_si32(acc);
      std::memcpy(out + static_cast<size_t>(x) * 3, &rgbx, 3);
#else
      int32_t r = bias, g = bias, b = bias;
      for (uint32_t t = 0; t < n; ++t, p += 3) {
        r += k[t] * p[0];
        g += k[t] * p[1];
        b += k[t] * p[2];
      }
      out[x * 3 + 0] = clamp_shift(r, axis.precision);
      out[x * 3 + 1] = clamp_shift(g, axis.precision);
      out[x * 3 + 2] = clamp_shift(b, axis.precision);
#endif
    }
  }
}

// One output row of the vertical pass: out[i] = clamp((bias + sum_t k[t] * rows[t][i]) >> prec).
void vertical_row(const uint8_t* const* rows, const int16_t* k, uint32_t n, uint32_t precision,
                  size_t length, uint8_t* out) {
  const int32_t bias = rounding_bias(precision);
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  const __m128i bias4 = _mm_set1_epi32(bias);
  const __m128i shift = _mm_cvtsi32_si128(static_cast<int>(precision));
  for (; i + 16 <= length; i += 16) {
    __m128i a0 = bias4, a1 = bias4, a2 = bias4, a3 = bias4;
    for (uint32_t t = 0; t < n; t += 2) {
      const bool pair = t + 1 < n;
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t] + i));
      const __m128i r1 =
          pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[t + 1] + i)) : zero;
      const uint32_t w = static_cast<uint16_t>(k[t]) |
                         (pair ? static_cast<uint32_t>(static_cast<uint16_t>(k[t + 1])) << 16 : 0u);
      const __m128i wv = _mm_set1_epi32(static_cast<int>(w));
      const __m128i lo = _mm_unpacklo_epi8(r0, r1);
      const __m128i hi = _mm_unpackhi_epi8(r0, r1);
      a0 = _mm_add_epi32(a0, _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), wv));
      a1 = _mm_add_epi32(a1, _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), wv));
      a2 = _mm_add_epi32(a2, _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), wv));
      a3 = _mm_add_epi32(a3, _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), wv));
    }
    a0 = _mm_sra_epi32(a0, shift);
    a1 = _mm_sra_epi32(a1, shift);
    a2 = _mm_sra_epi32(a2, shift);
    a3 = _mm_sra_epi32(a3, shift);
    const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(a0, a1), _mm_packs_epi32(a2, a3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
#endif
  for (; i < length; ++i) {
    int32_t acc = bias;
    for (uint32_t t = 0; t < n; ++t) acc += k[t] * rows[t][i];
    out[i] = clamp_shift(acc, precision);
  }
}

// Vertical pass: src has src_height rows of `row_bytes` bytes; dst has axis.first.size() rows.
void resample_vertical(const uint8_t* src, size_t row_bytes, uint8_t* dst,
                       const resample_axis& axis) {
  std::vector<const uint8_t*> rows(axis.taps);
  for (size_t y = 0; y < axis.first.size(); ++y) {
    const uint32_t n = axis.count[y];
    for (uint32_t t = 0; t < n; ++t) rows[t] = src + (axis.first[y] + t) * row_bytes;
    vertical_row(rows.data(), axis.coeffs.data() + y * axis.taps, n, axis.precision, row_bytes,
                 dst + y * row_bytes);
  }
}

}  // namespace

resample_axis make_resample_axis(uint32_t in_size, uint32_t out_size) {
  // HelperInterpBase::_compute_index_ranges_weights / _compute_indices_min_size_weights_aa with
  // scale = in / out, interp_size 4 (cubic), antialias on.
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double support = scale >= 1.0 ? (4 * 0.5) * scale : 4 * 0.5;
  const uint32_t taps = static_cast<uint32_t>(std::ceil(support)) * 2 + 1;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;

  resample_axis axis;
  axis.taps = taps;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  std::vector<double> weights(static_cast<size_t>(out_size) * taps, 0.0);
  double max_weight = 0.0;
  for (uint32_t i = 0; i < out_size; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    int64_t xsize = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size) - xmin;
    xsize = std::clamp<int64_t>(xsize, 0, taps);
    double* w = weights.data() + static_cast<size_t>(i) * taps;
    double total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = keys_cubic((static_cast<double>(j + xmin) - center + 0.5) * invscale);
      total += w[j];
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < xsize; ++j) {
        w[j] /= total;
        max_weight = std::max(max_weight, w[j]);
      }
    }
    axis.first[i] = static_cast<uint32_t>(xmin);
    axis.count[i] = static_cast<uint32_t>(xsize);
  }
  axis.precision = weights_precision(max_weight);
  axis.coeffs.resize(weights.size());
  for (size_t j = 0; j < weights.size(); ++j) axis.coeffs[j] = quantize(weights[j], axis.precision);
  return axis;
}

rgb_image resize_bicubic_antialias(const rgb_image& src, uint32_t width, uint32_t height) {
  const bool horizontal = width != src.width;
  const bool vertical = height != src.height;
  if (!horizontal && !vertical) return src;

  rgb_image dst;
  dst.width = width;
  dst.height = height;
  dst.pixels.resize(static_cast<size_t>(width) * height * 3);

  std::vector<uint8_t> between;
  const uint8_t* vertical_input = src.pixels.data();
  if (horizontal) {
    const resample_axis axis = make_resample_axis(src.width, width);
    uint8_t* out = dst.pixels.data();
    if (vertical) {
      between.resize(static_cast<size_t>(width) * src.height * 3);
      out = between.data();
    }
    resample_horizontal(src.pixels.data(), src.width, src.height, out, axis);
    vertical_input = out;
  }
  if (vertical) {
    const resample_axis axis = make_resample_axis(src.height, height);
    resample_vertical(vertical_input, static_cast<size_t>(width) * 3, dst.pixels.data(), axis);
  }
  return dst;
}

}  // namespace cua_s1
