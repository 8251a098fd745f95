// Reverses the PNG row filters (None, Sub, Up, Average, Paeth) of non-interlaced image data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cua_s1 {

// `filtered` holds `rows` rows of a filter byte and row_bytes bytes; `raw` receives the rows
// unpadded. bpp: bytes per complete pixel, at least 1. False for an unknown filter type (raw is
// then partly written). Large images are unfiltered by up to `helpers` pooled threads (see
// helper_threads.hpp) besides the caller, in a wavefront: a row's span waits only until the row
// above is final up to the span's end, so the rows progress together a few spans apart. A thread
// takes a few rows at once where two or more are Paeth rows of 3- or 4-byte pixels, so that their
// serial Paeth chains run side by side (png_paeth.hpp). The result does not depend on the thread
// count.
bool unfilter_png_rows(const uint8_t* filtered, size_t row_bytes, uint32_t rows, size_t bpp,
                       uint8_t* raw, unsigned helpers);

// The helper count unfilter_png_rows is given for an image of `bytes` unfiltered bytes: none
// below 256 KiB, else up to 3 as the machine's cores allow.
unsigned png_unfilter_helpers(size_t bytes);

}  // namespace cua_s1
