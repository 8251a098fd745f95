// gzip through zlib (bounded_inflate) and zstd through libzstd's streaming decoder, each one
// stream or frame with nothing after it, each stopped one byte past the output limit.
#include "codec/content_decoding.hpp"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>
#include <span>

#include "codec/bounded_inflate.hpp"

namespace cua_s1 {
namespace {

constexpr size_t output_step = 64 * 1024;  // output grows by this much, never by a claimed size

failure over_limit() { return {413, "request exceeds body limit"}; }

outcome<std::string> gunzip(const std::string& body, size_t max_output) {
  const auto bytes = std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  auto inflated = bounded_inflate(bytes, max_output + 1, inflate_wrapper::gzip);
  if (inflated.verdict == bounded_inflate_result::corrupt)
    return bad_request("corrupt gzip body");
  if (inflated.output.size() > max_output) return over_limit();
  if (!inflated.stream_ended) return bad_request("truncated gzip body");
  if (inflated.input_left != 0) return bad_request("data after the end of the gzip body");
  return std::string(inflated.output.begin(), inflated.output.end());
}

struct zstd_context_free {
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};

outcome<std::string> unzstd(const std::string& body, size_t max_output) {
  std::unique_ptr<ZSTD_DCtx, zstd_context_free> context(ZSTD_createDCtx());
  if (!context ||
      ZSTD_isError(ZSTD_DCtx_setParameter(context.get(), ZSTD_d_windowLogMax, max_zstd_window_log)))
    return failure{500, "zstd decoder unavailable"};
  ZSTD_inBuffer input{body.data(), body.size(), 0};
  std::string output;
  while (true) {
    const size_t before = output.size();
    const size_t room = std::min(max_output + 1 - before, output_step);
    output.resize(before + room);
    ZSTD_outBuffer out{output.data() + before, room, 0};
    const size_t hint = ZSTD_decompressStream(context.get(), &out, &input);
    output.resize(before + out.pos);
    if (ZSTD_isError(hint)) {
      if (ZSTD_getErrorCode(hint) == ZSTD_error_frameParameter_windowTooLarge)
        return bad_request("zstd window exceeds 8 MiB");
      return bad_request("corrupt zstd body");
    }
    if (output.size() > max_output) return over_limit();
    if (hint == 0) break;  // the frame is complete
    // All input taken and the output not filled: the decoder has given all it can.
    if (input.pos == input.size && out.pos < room) return bad_request("truncated zstd body");
  }
  if (input.pos != input.size) return bad_request("data after the end of the zstd body");
  return output;
}

}  // namespace

std::optional<content_coding> parse_content_encoding(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  std::string coding(value);
  for (char& c : coding) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (coding.empty() || coding == "identity") return content_coding::identity;
  if (coding == "gzip" || coding == "x-gzip") return content_coding::gzip;
  if (coding == "zstd") return content_coding::zstd;
  return std::nullopt;
}

outcome<std::string> decode_content(std::string body, content_coding coding, size_t max_output) {
  switch (coding) {
    case content_coding::identity:
      if (body.size() > max_output) return over_limit();
      return body;
    case content_coding::gzip:
      return gunzip(body, max_output);
    case content_coding::zstd:
      return unzstd(body, max_output);
  }
  return bad_request("unknown content coding");
}

}  // namespace cua_s1
