// Normalization and Qwen2-VL patch flattening of a resized picture into `pixel_values`.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "codec/rgb_image.hpp"
#include "prep/processor_config.hpp"
#include "prep/smart_resize.hpp"

namespace cua_s1 {

// image_grid_thw: temporal groups (1 for a still picture), patch rows, patch columns.
struct grid_thw {
  uint32_t t = 0;
  uint32_t h = 0;
  uint32_t w = 0;
};

// {1, height / patch, width / patch} for a picture already resized by smart_resize.
grid_thw image_grid_thw(uint32_t width, uint32_t height, const processor_config& config);

// Floats per patch row of pixel_values: 3 * temporal_patch_size * patch_size^2 (1536).
uint32_t patch_dim(const processor_config& config);

// pixel_values as the torchvision Qwen2VLImageProcessor makes them: row-major float32
// [patches, patch_dim], patches in (block_y, block_x, merge_y, merge_x) order and each row in
// (channel, temporal, patch_y, patch_x) order, the frame repeated over the temporal positions,
// each value (u8 - mean * 255) / (std * 255) in float32. Sides must be multiples of
// patch_size * merge_size.
std::vector<float> make_pixel_values(const rgb_image& resized, const processor_config& config);

// make_pixel_values into caller memory of grid.h * grid.w * patch_dim floats (e.g. a reused or
// pinned upload buffer), avoiding the allocation and first-touch cost of a fresh vector.
void write_pixel_values(const rgb_image& resized, const processor_config& config, float* out);

// What a backend needs to make pixel_values from the resized picture exactly as
// write_pixel_values does: value = (u8 - mean[c]) / std[c] in float32 (true division), with
// mean[c] = float32(image_mean[c]) * 255 and std[c] = float32(image_std[c]) * 255.
struct pixel_normalization {
  std::array<float, 3> mean{}, std{};
  uint32_t patch_size = 0, merge_size = 0, temporal_patch_size = 0;
};

struct prepared_image {
  resized_size resized;
  grid_thw grid;
  std::vector<float> pixel_values;  // empty when they are left to the backend
  // The decoded picture, not resized, kept when the backend makes the pixel values: the backend
  // resizes it to `resized` (resize_bicubic_antialias, bit for bit) where the sizes differ.
  rgb_image picture;
  pixel_normalization normalization;  // set with `picture`
};

// Where pixel_values are made: here on the CPU, or by the backend from the decoded picture (the
// CUDA backend uploads the 8-bit picture, resizes it, and normalizes and flattens it on the GPU,
// with the same integer and float32 arithmetic as resize_bicubic_antialias and
// write_pixel_values).
enum class pixel_values_on { host, backend };

// smart_resize, antialiased bicubic resize and make_pixel_values (or, for pixel_values_on::backend,
// picture_for_backend of a copy) in one call. Precondition: aspect_ratio_supported(image.width,
// image.height).
prepared_image preprocess_image(const rgb_image& image, const processor_config& config,
                                pixel_values_on where = pixel_values_on::host);

// For pixel_values_on::backend: the smart_resize geometry, the grid, the normalization and the
// decoded picture itself (moved in, not resized).
prepared_image picture_for_backend(rgb_image image, const processor_config& config);

}  // namespace cua_s1
