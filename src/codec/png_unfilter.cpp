// PNG row unfiltering, one thread or a wavefront of several (see png_unfilter.hpp).
#include "codec/png_unfilter.hpp"

#include "codec/helper_threads.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace cua_s1 {
namespace {

constexpr size_t span_bytes = 1024;  // the wavefront's unit of progress within a row

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
      const uint32_t y = next_row_.fetch_add(1, std::memory_order_relaxed);
      if (y >= rows_) return;
      const uint8_t* source = filtered_ + size_t{y} * (row_bytes_ + 1);
      const uint8_t filter = source[0];
      uint8_t* row = raw_ + size_t{y} * row_bytes_;
      const uint8_t* up = y ? row - row_bytes_ : zero_row_.data();
      if (filter > 4) failed_.store(true, std::memory_order_relaxed);
      const bool reads_up = filter >= 2 && y > 0;
      for (size_t begin = 0; begin < row_bytes_;) {
        const size_t end = std::min(row_bytes_, begin + span_bytes);
        if (reads_up) wait_until_final(y - 1, end);
        std::memcpy(row + begin, source + 1 + begin, end - begin);
        if (filter <= 4) unfilter_span(filter, row, up, begin, end, bpp_);
        final_bytes_[y].store(end, std::memory_order_release);
        begin = end;
      }
    }
  }

  bool failed() const { return failed_.load(); }

 private:
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
