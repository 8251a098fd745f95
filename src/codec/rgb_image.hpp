// A decoded picture: 8-bit RGB, row-major, no padding between rows.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/picture_memory.hpp"

namespace cua_s1 {

struct rgb_image {
  uint32_t width = 0;
  uint32_t height = 0;
  picture_bytes pixels;  // width * height * 3 bytes, R G B per pixel
};

}  // namespace cua_s1
