// libFuzzer target: PNG header checks and decoding to RGB8 (only 200 or 422, never a crash).
#include <cstddef>
#include <cstdint>
#include <span>

#include "codec/image_decoder.hpp"
#include "prep/pixel_values.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto image = cua_s1::decode_image(std::span<const uint8_t>(data, size), cua_s1::image_mime::png);
  if (!image) {
    if (image.error().status != 422) __builtin_trap();
    return 0;
  }
  if (image->pixels.size() != size_t(image->width) * image->height * 3) __builtin_trap();
  // Every decodable image must also preprocess (small ones only, to keep iterations fast).
  if (size_t(image->width) * image->height <= 4096) {
    auto prepared = cua_s1::preprocess_image(*image, cua_s1::processor_config{});
    if (prepared.pixel_values.empty()) __builtin_trap();
  }
  return 0;
}
