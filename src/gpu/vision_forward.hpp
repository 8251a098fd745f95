// The vision encoder on the GPU (spec/model.md 3): fp32 residual stream, bf16 GEMM inputs.
#pragma once

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "model/model_config.hpp"
#include "prep/pixel_values.hpp"

namespace cua_s1::gpu {

// Image features [patches / merge^2, out_hidden] fp32 on the device, enqueued on ctx.stream.
device_buffer<float> encode_image(const forward_context& ctx, const vision_config& config,
                                  const device_vision& weights, const prepared_image& image);

}  // namespace cua_s1::gpu
