// zlib's inflate driven the way CPython's Decompress.decompress drives it with max_length.
#include "codec/bounded_inflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace cua_s1 {

bounded_inflate_result bounded_inflate(std::span<const uint8_t> stream, size_t max_output,
                                       inflate_wrapper wrapper) {
  bounded_inflate_result result;
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer around the deflate data, and nothing else.
  const int window_bits = wrapper == inflate_wrapper::gzip ? 16 + MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&z, window_bits) != Z_OK) {
    result.verdict = bounded_inflate_result::corrupt;
    return result;
  }
  z.next_in = const_cast<Bytef*>(stream.data());
  z.avail_in = static_cast<uInt>(std::min<size_t>(stream.size(), UINT_MAX));
  // A PNG chunk is at most 2^31 - 1 bytes and a request body 8 MiB, so one avail_in covers it.
  int status = Z_OK;
  while (result.output.size() < max_output) {
    const size_t before = result.output.size();
    const size_t room = std::min<size_t>(max_output - before, 64 * 1024);
    result.output.resize(before + room);
    z.next_out = result.output.data() + before;
    z.avail_out = static_cast<uInt>(room);
    status = inflate(&z, Z_SYNC_FLUSH);
    result.output.resize(before + room - z.avail_out);
    if (status == Z_STREAM_END) break;
    if (status != Z_OK && status != Z_BUF_ERROR) {  // Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR
      result.verdict = bounded_inflate_result::corrupt;
      break;
    }
    if (z.avail_in == 0 && z.avail_out != 0) break;  // all input taken, nothing more to give
  }
  result.stream_ended = status == Z_STREAM_END;
  result.input_left = z.avail_in;
  if (result.verdict == bounded_inflate_result::fits && status != Z_STREAM_END &&
      result.output.size() == max_output && z.avail_in > 0)
    result.verdict = bounded_inflate_result::too_large;
  inflateEnd(&z);
  return result;
}

}  // namespace cua_s1
