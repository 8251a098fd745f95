// The PNG Paeth filter reversed for 3- and 4-byte pixels, one whole pixel per SIMD step, for
// several rows side by side.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cua_s1 {

// True when undo_paeth_spans handles pixels of `bpp` bytes on this build (3 or 4 on x86-64).
bool paeth_pixels_supported(size_t bpp);

// Bytes [begin, end) of one row to unfilter: filtered bytes read from `filtered`, final ones
// written to `row`, against the finished row above (`up`: zeros for the first row). Both ends
// are multiples of bpp and the bytes of `row` before `begin` are final.
struct paeth_span {
  uint8_t* row;
  const uint8_t* filtered;
  const uint8_t* up;
  size_t begin, end;
};

// Undoes the Paeth filter on independent spans (none reads bytes another writes), exactly as
// the scalar rule does. The spans are worked through side by side, two to a register, so that
// their pixel-to-pixel dependency chains overlap; give two or more (a single span runs at one
// chain's latency, slower than the scalar rule's three interleaved byte chains).
void undo_paeth_spans(const paeth_span* spans, size_t count, size_t bpp);

}  // namespace cua_s1
