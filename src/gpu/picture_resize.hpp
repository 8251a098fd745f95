// The screenshot on the GPU at the processor's size: the decoded 8-bit picture is uploaded as is
// and resized there (kernels/resize.hpp, bit-identical to resize_bicubic_antialias), so the host
// does not spend its request time on the resize.
#pragma once

#include <cstdint>

#include "codec/rgb_image.hpp"
#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"

namespace cua_s1::gpu {

// [height, width, 3] bytes on the device: `picture` uploaded and, where its size differs,
// resampled (horizontal pass first, then vertical, as the host resize).
device_buffer<uint8_t> upload_resized_picture(const forward_context& ctx, const rgb_image& picture,
                                              uint32_t width, uint32_t height);

}  // namespace cua_s1::gpu
