// SSE2 Paeth unfiltering (see png_paeth.hpp): a pixel's channels in 16-bit lanes, two spans'
// pixels to a register, the predictor picked with branch-free masks.
#include "codec/png_paeth.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cua_s1 {

#if defined(__SSE2__) && defined(__x86_64__)
namespace {

// A pixel's bytes; `wide` reads 4 (the 4th, if any, goes to a lane that is never stored), which
// the caller allows where that byte is its own.
template <size_t bpp, bool wide>
inline uint64_t read_pixel(const uint8_t* p) {
  uint32_t v;
  if constexpr (wide || bpp == 4) std::memcpy(&v, p, 4);
  else v = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16;
  return v;
}

template <size_t bpp, bool wide>
inline void write_pixel(uint8_t* p, uint32_t v) {
  if constexpr (wide || bpp == 4) {
    std::memcpy(p, &v, 4);
  } else {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v >> 16);
  }
}

// n (1 or 2) pixels of different spans in one register, 16-bit lanes 4k .. 4k+3 for span k.
template <size_t bpp, bool wide, size_t n>
inline __m128i load_pixels(const std::array<const uint8_t*, n>& p) {
  uint64_t v = read_pixel<bpp, wide>(p[0]);
  if constexpr (n == 2) v |= read_pixel<bpp, wide>(p[1]) << 32;
  return _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(v)), _mm_setzero_si128());
}

template <size_t bpp, bool wide, size_t n>
inline void store_pixels(const std::array<uint8_t*, n>& p, __m128i v) {
  const auto packed = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_packus_epi16(v, v)));
  write_pixel<bpp, wide>(p[0], static_cast<uint32_t>(packed));
  if constexpr (n == 2) write_pixel<bpp, wide>(p[1], static_cast<uint32_t>(packed >> 32));
}

inline __m128i abs16(__m128i v) { return _mm_max_epi16(v, _mm_sub_epi16(_mm_setzero_si128(), v)); }

// The serial chains of n spans, packed in one register: where each is, and the left (a) and
// upper-left (c) pixels.
template <size_t n>
struct chains {
  std::array<paeth_span, n> span;
  std::array<size_t, n> i;
  __m128i a, c;

};

// The first pixel of a row has a = c = 0, so its predictor is b.
template <size_t bpp, size_t n>
chains<n> start(const std::array<paeth_span, n>& spans) {
  chains<n> ch{spans, {}, _mm_setzero_si128(), _mm_setzero_si128()};
  uint64_t a = 0, c = 0;
  for (size_t k = 0; k < n; ++k) {
    ch.i[k] = spans[k].begin;
    if (spans[k].begin == 0) continue;
    a |= read_pixel<bpp, false>(spans[k].row + spans[k].begin - bpp) << (32 * k);
    c |= read_pixel<bpp, false>(spans[k].up + spans[k].begin - bpp) << (32 * k);
  }
  ch.a = _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(a)), _mm_setzero_si128());
  ch.c = _mm_unpacklo_epi8(_mm_cvtsi64_si128(static_cast<long long>(c)), _mm_setzero_si128());
  return ch;
}

// One pixel of each chain. With a = left, b = up, c = upper left, p = a + b - c: a when
// |p-a| <= |p-b| and |p-a| <= |p-c|, else b when |p-b| <= |p-c|, else c; |p-a| = |b-c|,
// |p-b| = |a-c|, |p-c| = |a+b-2c|.
template <size_t bpp, bool wide, size_t n>
inline void step(chains<n>& ch) {
  std::array<const uint8_t*, n> up, filtered;
  std::array<uint8_t*, n> out;
  for (size_t k = 0; k < n; ++k) {
    up[k] = ch.span[k].up + ch.i[k];
    filtered[k] = ch.span[k].filtered + ch.i[k];
    out[k] = ch.span[k].row + ch.i[k];
    ch.i[k] += bpp;
  }
  const __m128i b = load_pixels<bpp, wide, n>(up);
  const __m128i x = load_pixels<bpp, wide, n>(filtered);
  const __m128i a = ch.a, c = ch.c;
  const __m128i pa = abs16(_mm_sub_epi16(b, c));
  const __m128i b_minus_2c = _mm_sub_epi16(b, _mm_add_epi16(c, c));
  const __m128i pb = abs16(_mm_sub_epi16(a, c));
  const __m128i pc = abs16(_mm_add_epi16(a, b_minus_2c));
  const __m128i not_b = _mm_cmpgt_epi16(pb, pc);                      // c beats b
  const __m128i not_a = _mm_cmpgt_epi16(pa, _mm_min_epi16(pb, pc));  // b or c beats a
  const __m128i b_or_c = _mm_or_si128(_mm_and_si128(not_b, c), _mm_andnot_si128(not_b, b));
  const __m128i predictor = _mm_or_si128(_mm_and_si128(not_a, b_or_c), _mm_andnot_si128(not_a, a));
  ch.a = _mm_and_si128(_mm_add_epi16(x, predictor), _mm_set1_epi16(0xFF));
  store_pixels<bpp, wide, n>(out, ch.a);
  ch.c = b;
}

// The rest of one span alone; every pixel but its last may read and write a byte of the next.
template <size_t bpp>
void finish(chains<1>& ch) {
  const size_t end = ch.span[0].end;
  if (ch.i[0] >= end) return;
  while (ch.i[0] + bpp < end) step<bpp, true>(ch);
  step<bpp, false>(ch);
}

template <size_t bpp>
void finish(chains<2>& ch) {
  chains<1> first{{ch.span[0]}, {ch.i[0]}, ch.a, ch.c};
  chains<1> second{{ch.span[1]}, {ch.i[1]}, _mm_srli_si128(ch.a, 8), _mm_srli_si128(ch.c, 8)};
  finish<bpp>(first);
  finish<bpp>(second);
}

// The spans in `pairs` registers of two and `singles` of one, all stepped together (their
// serial chains overlap in the core) while every span has pixels left, then each finished alone.
template <size_t bpp, size_t pairs, size_t singles>
void undo_paeth(const paeth_span* spans) {
  std::array<chains<2>, pairs> two;
  std::array<chains<1>, singles> one;
  size_t together = SIZE_MAX;
  for (size_t k = 0; k < 2 * pairs + singles; ++k)
    together = std::min(together, (spans[k].end - spans[k].begin) / bpp);
  for (size_t k = 0; k < pairs; ++k) two[k] = start<bpp, 2>({spans[2 * k], spans[2 * k + 1]});
  for (size_t k = 0; k < singles; ++k) one[k] = start<bpp, 1>({spans[2 * pairs + k]});
  for (size_t p = 1; p < together; ++p) {  // not the last common pixel: a span may end there
    for (auto& ch : two) step<bpp, true>(ch);
    for (auto& ch : one) step<bpp, true>(ch);
  }
  for (auto& ch : two) finish<bpp>(ch);
  for (auto& ch : one) finish<bpp>(ch);
}

// Four spans at a time (two registers), the rest in a group of two or three: never one alone
// once two are given.
template <size_t bpp>
void undo_paeth_group(const paeth_span* spans, size_t count) {
  for (; count > 4; spans += 4, count -= 4) {
    if (count == 5) {
      undo_paeth<bpp, 1, 1>(spans);
      spans += 3, count -= 3;
      break;
    }
    undo_paeth<bpp, 2, 0>(spans);
  }
  if (count == 4) undo_paeth<bpp, 2, 0>(spans);
  if (count == 3) undo_paeth<bpp, 1, 1>(spans);
  if (count == 2) undo_paeth<bpp, 1, 0>(spans);
  if (count == 1) undo_paeth<bpp, 0, 1>(spans);
}

}  // namespace

bool paeth_pixels_supported(size_t bpp) { return bpp == 3 || bpp == 4; }

void undo_paeth_spans(const paeth_span* spans, size_t count, size_t bpp) {
  if (bpp == 3) undo_paeth_group<3>(spans, count);
  else undo_paeth_group<4>(spans, count);
}

#else

bool paeth_pixels_supported(size_t) { return false; }
void undo_paeth_spans(const paeth_span*, size_t, size_t) {}

#endif

}  // namespace cua_s1
