// PNG row unfiltering, one thread or a wavefront of several (see png_unfilter.hpp).
#include "codec/png_unfilter.hpp"

#include "codec/helper_threads.hpp"
#include "codec/png_paeth.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace cua_s1 {
namespace {

constexpr size_t span_bytes = 256;  // about the wavefront's unit of progress within a row
constexpr uint32_t rows_together = 8;  // rows one thread takes at once when Paeth rows gain by it

// Undoes `filter` on bytes [begin, end) of a row already copied into `row`, against the finished
// row above (`up`: zeros for the first row). The first pixel (no left neighbour) is handled
// apart, so the inner loops have no per-byte conditions.
void unfilter_span(uint8_t filter, uint8_t* __restrict row, const uint8_t* __restrict up,
                   size_t begin, size_t end, size_t bpp) {
  const size_t lead_end = std::min(bpp, end), rest = std::max(begin, bpp);
  switch (filter) {
    case 1:
      for (size_t i = rest; i < end; ++i) row[i] = static_cast<uint8_t>(row[i] + row[i - bpp]);
      break;
    case 2:
      for (size_t i = begin; i < end; ++i) row[i] = static_cast<uint8_t>(row[i] + up[i]);
      break;
    case 3:
      for (size_t i = begin; i < lead_end; ++i) row[i] = static_cast<uint8_t>(row[i] + (up[i] >> 1));
      for (size_t i = rest; i < end; ++i)
        row[i] = static_cast<uint8_t>(row[i] + ((unsigned{row[i - bpp]} + up[i]) >> 1));
      break;
    case 4:
      // With a = left = 0 and c = upper left = 0 the Paeth predictor is b = up.
      for (size_t i = begin; i < lead_end; ++i) row[i] = static_cast<uint8_t>(row[i] + up[i]);
      for (size_t i = rest; i < end; ++i) {
        const int a = row[i - bpp], b = up[i], c = up[i - bpp];
        // |p - a|, |p - b|, |p - c| for p = a + b - c
        const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
        const int predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        row[i] = static_cast<uint8_t>(row[i] + predictor);
      }
      break;
    default: break;  // 0: None
  }
}

// The rows shared out among threads: each claims the next row and works through it span by
// span, publishing how far it is final.
class wavefront {
 public:
  wavefront(const uint8_t* filtered, size_t row_bytes, uint32_t rows, size_t bpp, uint8_t* raw)
      : filtered_(filtered), raw_(raw), row_bytes_(row_bytes), rows_(rows), bpp_(bpp),
        final_bytes_(new std::atomic<size_t>[rows]), zero_row_(row_bytes, 0) {
    for (uint32_t y = 0; y < rows; ++y) final_bytes_[y].store(0, std::memory_order_relaxed);
  }

  void work() {
    for (;;) {
      uint32_t y = next_row_.load(std::memory_order_relaxed), count;
      do {
        if (y >= rows_) return;
        count = rows_to_claim(y);
      } while (!next_row_.compare_exchange_weak(y, y + count, std::memory_order_relaxed));
      unfilter_rows(y, count);
    }
  }

  bool failed() const { return failed_.load(); }

 private:
  const uint8_t* source(uint32_t y) const { return filtered_ + size_t{y} * (row_bytes_ + 1); }
  uint8_t* row(uint32_t y) const { return raw_ + size_t{y} * row_bytes_; }
  const uint8_t* above(uint32_t y) const { return y ? row(y - 1) : zero_row_.data(); }

  // The rows to take together from row y: up to rows_together when at least two of them are
  // Paeth rows undo_paeth_spans can take (whole pixels only), else 1.
  uint32_t rows_to_claim(uint32_t y) const {
    if (!paeth_pixels_supported(bpp_) || row_bytes_ % bpp_ != 0) return 1;
    const uint32_t count = std::min(rows_together, rows_ - y);
    uint32_t paeth = 0;
    for (uint32_t g = 0; g < count; ++g) paeth += source(y + g)[0] == 4;
    return paeth >= 2 ? count : 1;
  }

  // Rows y .. y + count - 1 on a diagonal: in step k, row y + g works on its span k - g, right
  // behind the row above it. Spans of the same step are independent, so their Paeth spans go to
  // undo_paeth_spans together (their serial chains overlap); a lone one takes the scalar rule.
  void unfilter_rows(uint32_t y, uint32_t count) {
    const size_t spans = (row_bytes_ + span_ - 1) / span_;
    for (size_t k = 0; k < spans + count - 1; ++k) {
      const size_t first = k < spans ? 0 : k - spans + 1, last = std::min<size_t>(k, count - 1);
      if (first == 0 && y > 0 && source(y)[0] >= 2)
        wait_until_final(y - 1, std::min(row_bytes_, (k + 1) * span_));
      paeth_span paeth[rows_together];
      size_t paeth_count = 0;
      for (size_t g = first; g <= last; ++g) {
        const uint32_t r = y + static_cast<uint32_t>(g);
        const size_t begin = (k - g) * span_, end = std::min(row_bytes_, begin + span_);
        const uint8_t filter = source(r)[0];
        if (filter == 4 && count > 1) {
          paeth[paeth_count++] = {row(r), source(r) + 1, above(r), begin, end};
          continue;
        }
        if (filter > 4) failed_.store(true, std::memory_order_relaxed);
        std::memcpy(row(r) + begin, source(r) + 1 + begin, end - begin);
        if (filter <= 4) unfilter_span(filter, row(r), above(r), begin, end, bpp_);
      }
      if (paeth_count >= 2) {
        undo_paeth_spans(paeth, paeth_count, bpp_);
      } else if (paeth_count == 1) {
        const paeth_span& p = paeth[0];
        std::memcpy(p.row + p.begin, p.filtered + p.begin, p.end - p.begin);
        unfilter_span(4, p.row, p.up, p.begin, p.end, bpp_);
      }
      for (size_t g = first; g <= last; ++g)
        final_bytes_[y + g].store(std::min(row_bytes_, (k - g + 1) * span_),
                                  std::memory_order_release);
    }
  }

  // The row above is being unfiltered by a running thread (rows are claimed in order), so this
  // ends; it yields after a short spin in case that thread lost its core.
  void wait_until_final(uint32_t y, size_t bytes) const {
    for (unsigned spins = 0; final_bytes_[y].load(std::memory_order_acquire) < bytes; ++spins)
      if (spins >= 64) std::this_thread::yield();
  }

  const uint8_t* filtered_;
  uint8_t* raw_;
  size_t row_bytes_;
  uint32_t rows_;
  size_t bpp_;
  // Whole pixels (as undo_paeth_spans needs), the row cut into near-equal spans (so the Paeth
  // spans of one step mostly end together).
  size_t span_ = (row_bytes_ / ((row_bytes_ + span_bytes - 1) / span_bytes) + bpp_ - 1) / bpp_ * bpp_;
  std::unique_ptr<std::atomic<size_t>[]> final_bytes_;
  std::vector<uint8_t> zero_row_;
  std::atomic<uint32_t> next_row_{0};
  std::atomic<bool> failed_{false};
};

}  // namespace

bool unfilter_png_rows(const uint8_t* filtered, size_t row_bytes, uint32_t rows, size_t bpp,
                       uint8_t* raw, unsigned helpers) {
  wavefront rows_to_do(filtered, row_bytes, rows, bpp, raw);
  run_with_helpers(helpers, [&rows_to_do] { rows_to_do.work(); });
  return !rows_to_do.failed();
}

unsigned png_unfilter_helpers(size_t bytes) {
  if (bytes < (size_t{256} << 10)) return 0;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores >= 4 ? 3 : cores >= 2 ? 1 : 0;
}

}  // namespace cua_s1
