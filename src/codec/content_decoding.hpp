// Request bodies sent with Content-Encoding gzip or zstd, decoded with their output bounded.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/outcome.hpp"

namespace cua_s1 {

enum class content_coding { identity, gzip, zstd };

// The largest zstd window accepted (ZSTD_d_windowLogMax 23: 8 MiB, the body limit); a frame
// asking for more is refused before its window is allocated.
inline constexpr int max_zstd_window_log = 23;

// The coding a Content-Encoding header value names: identity (also an empty value), gzip
// (or x-gzip) or zstd, case-insensitive; nullopt for any other coding or several stacked
// ("gzip, zstd"), which the server answers 415.
std::optional<content_coding> parse_content_encoding(std::string_view value);

// `body` decoded. 413 "request exceeds body limit" as soon as the output passes `max_output`
// (never more than max_output + 1 bytes are held, whatever the stream claims); 400 for a corrupt
// or truncated stream, data after its end, or a zstd window over max_zstd_window_log.
outcome<std::string> decode_content(std::string body, content_coding coding, size_t max_output);

}  // namespace cua_s1
