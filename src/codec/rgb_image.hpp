// A decoded picture: 8-bit RGB, row-major, no padding between rows.
#pragma once

#include <cstdint>
#include <vector>

namespace cua_s1 {

struct rgb_image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3 bytes, R G B per pixel
};

}  // namespace cua_s1
