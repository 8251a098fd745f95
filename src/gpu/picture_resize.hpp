// The screenshot on the GPU at the processor's size: the decoded 8-bit picture is uploaded as is
// and resized there (kernels/resize.hpp, bit-identical to resize_bicubic_antialias), so the host
// does not spend its request time on the resize.
#pragma once

#include <cstdint>

#include "codec/rgb_image.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"

namespace cua_s1::gpu {

// The resize of [from_h, from_w, 3] pictures to [to_h, to_w, 3] on the device (horizontal pass
// first, then vertical, as the host resize), its taps uploaded once by the constructor.
class picture_resizer {
 public:
  picture_resizer(const forward_context& ctx, uint32_t from_w, uint32_t from_h, uint32_t to_w,
                  uint32_t to_h);

  // The resized picture of `source` (a device picture of the `from` size): `source` itself where
  // the sizes are equal, else `storage`, which this (re)allocates on ctx.stream.
  const uint8_t* resize(const forward_context& ctx, const uint8_t* source,
                        device_buffer<uint8_t>& storage) const;

 private:
  struct axis_taps {  // one axis's taps on the device, for the kernels
    device_buffer<uint32_t> first, count;
    device_buffer<int16_t> coeffs;
    uint32_t taps = 0, precision = 0;
  };
  static axis_taps upload_axis(const forward_context& ctx, uint32_t in_size, uint32_t out_size);

  uint32_t from_w_, from_h_, to_w_, to_h_;
  axis_taps horizontal_, vertical_;  // empty where that side keeps its size
};

// [height, width, 3] bytes on the device: `picture` uploaded and, where its size differs,
// resampled.
device_buffer<uint8_t> upload_resized_picture(const forward_context& ctx, const rgb_image& picture,
                                              uint32_t width, uint32_t height);

}  // namespace cua_s1::gpu
