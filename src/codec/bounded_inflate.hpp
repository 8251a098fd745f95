// Python's zlib.decompressobj().decompress(data, max_length), as Pillow's PNG text and ICC
// chunk handlers call it: a zlib stream inflated with its output capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cua_s1 {

struct bounded_inflate_result {
  enum kind {
    fits,       // the stream ended, the input ran out, or the cap was filled with no input left
    too_large,  // the cap was reached with input left (Python: a non-empty unconsumed_tail)
    corrupt     // zlib reported an error (Python: zlib.error)
  } verdict = fits;
  std::vector<uint8_t> output;  // what was inflated, at most the cap
};

// Inflates `stream` to at most `max_output` bytes: the work is bounded by the cap, whatever
// the stream claims.
bounded_inflate_result bounded_zlib_inflate(std::span<const uint8_t> stream, size_t max_output);

}  // namespace cua_s1
