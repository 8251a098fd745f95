// A zlib or gzip stream inflated with its output capped: Python's
// zlib.decompressobj().decompress(data, max_length), as Pillow's PNG text and ICC chunk handlers
// call it, and gzip request bodies (content_decoding).
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
  bool stream_ended = false;    // the stream's end was reached (false: truncated or cut at the cap)
  size_t input_left = 0;        // bytes after the stream's end, or not read when it stopped
};

// The framing around the deflate data.
enum class inflate_wrapper { zlib, gzip };

// Inflates `stream` to at most `max_output` bytes: the work is bounded by the cap, whatever
// the stream claims.
bounded_inflate_result bounded_inflate(std::span<const uint8_t> stream, size_t max_output,
                                       inflate_wrapper wrapper);

inline bounded_inflate_result bounded_zlib_inflate(std::span<const uint8_t> stream,
                                                   size_t max_output) {
  return bounded_inflate(stream, max_output, inflate_wrapper::zlib);
}

}  // namespace cua_s1
