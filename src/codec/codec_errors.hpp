// The client-facing 422 messages of the image codec (contract section 3.2, item 5), in one place.
#pragma once

#include <string_view>

namespace cua_s1::codec_errors {

inline constexpr std::string_view bad_prefix = "only inline PNG/JPEG images are supported";
inline constexpr std::string_view encoded_too_long = "encoded image exceeds 4 MiB";
inline constexpr std::string_view decoded_too_long = "image exceeds 4 MiB";
inline constexpr std::string_view format_mismatch = "image format does not match its MIME type";
inline constexpr std::string_view aspect_ratio = "image aspect ratio must not exceed 200:1";
inline constexpr std::string_view size_limits =
    "image must be single-frame, at most 2048 per side and 1048576 pixels";
inline constexpr std::string_view invalid_data = "invalid image data";
// Our choice (Pillow would convert CMYK): see jpeg_decoder.cpp.
inline constexpr std::string_view cmyk_unsupported = "CMYK JPEG images are not supported";

}  // namespace cua_s1::codec_errors
