// The vision encoder on the GPU (spec/model.md 3): fp32 residual stream, bf16 GEMM inputs.
// Split into what one image size needs once (image_plan), the per-image upload, and the encoder
// itself, which reads only device memory (so vision_graphs can capture it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "gpu/device_buffer.hpp"
#include "gpu/forward_context.hpp"
#include "gpu/picture_resize.hpp"
#include "model/model_config.hpp"
#include "prep/pixel_values.hpp"

namespace cua_s1::gpu {

// Everything encoding images of one size and kind needs besides their pixels, on the device:
// position-embedding taps, rotary tables and, for a picture the backend resizes, the resize taps.
struct image_plan {
  grid_thw grid;
  bool from_values = false;  // the host made the fp32 pixel values; else the 8-bit picture comes
  uint32_t picture_width = 0, picture_height = 0;  // the picture's decoded size
  pixel_normalization normalization;
  device_buffer<int32_t> tap_rows;
  device_buffer<float> tap_weights, cos, sin;
  std::optional<picture_resizer> resizer;

  int64_t patches() const { return int64_t(grid.h) * grid.w; }
  // Bytes of the uploaded input: fp32 pixel values, or the picture's RGB bytes.
  size_t input_bytes(const vision_config& config) const;
  // Whether `image` has this plan's size and kind.
  bool fits(const prepared_image& image) const;
};

// The plan of `image`'s size and kind (validated against `config`), uploaded on ctx.stream.
image_plan make_image_plan(const forward_context& ctx, const vision_config& config,
                           const prepared_image& image);

// Enqueues the upload of `image`'s pixels (plan.fits(image)) into `input` (input_bytes).
void upload_image(const forward_context& ctx, const image_plan& plan, const prepared_image& image,
                  void* input);

// Image features [patches / merge^2, out_hidden] fp32 into `features`, from the uploaded input;
// enqueued on ctx.stream, reading and writing device memory only.
void enqueue_encoder(const forward_context& ctx, const vision_config& config,
                     const device_vision& weights, const image_plan& plan, const void* input,
                     float* features);

// One image of a packed encoder pass: its plan and its uploaded input.
struct encoder_image {
  const image_plan* plan = nullptr;
  const void* input = nullptr;
};

// The features of 1 to 8 images, back to back in `features`, from one pass: every row-wise step
// (GEMMs, norms, rotary) over all their patches at once, position embeddings and attention per
// image. One image runs exactly as the overload above.
void enqueue_encoder(const forward_context& ctx, const vision_config& config,
                     const device_vision& weights, std::span<const encoder_image> images,
                     float* features);

// Rows of the image features: patches / merge^2.
int64_t image_feature_rows(const vision_config& config, const grid_thw& grid);

// The whole encoder, eagerly: plan, upload and encoder for one image.
device_buffer<float> encode_image(const forward_context& ctx, const vision_config& config,
                                  const device_vision& weights, const prepared_image& image);

}  // namespace cua_s1::gpu
