// libFuzzer target: data URL prefix, strict base64 and the image pipeline behind it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/image_decoder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view url(reinterpret_cast<const char*>(data), size);
  auto image = cua_s1::decode_image_data_url(url);
  if (!image && image.error().status != 422) __builtin_trap();
  if (image && image->pixels.size() != size_t(image->width) * image->height * 3) __builtin_trap();
  return 0;
}
