// Vision forward: patch GEMM + bias + interpolated positions, blocks (LayerNorm, qkv, 2-D rotary,
// attention, proj, MLP with LoRA), merger. Host-side geometry is uploaded once per image.
#include "gpu/vision_forward.hpp"

#include <cmath>
#include <stdexcept>

#include "gpu/picture_resize.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/norms.hpp"
#include "kernels/vision.hpp"
#include "model/cpu/rope.hpp"
#include "model/position_taps.hpp"

namespace cua_s1::gpu {
namespace {

constexpr float layer_norm_eps = 1e-6f;

struct image_geometry {  // per image, on the device
  device_buffer<int32_t> tap_rows;
  device_buffer<float> tap_weights;
  device_buffer<float> cos, sin;
};

image_geometry upload_geometry(const forward_context& ctx, const vision_config& config,
                               const grid_thw& grid) {
  const position_taps taps =
      vision_position_taps(grid, config.position_side(), config.spatial_merge_size);
  const cpu::rotary_table rotary = cpu::vision_rotary(grid.h, grid.w, config.spatial_merge_size,
                                                      config.head_dim(), config.rope_theta);
  image_geometry g{device_buffer<int32_t>(taps.rows.size(), ctx.stream),
                   device_buffer<float>(taps.weights.size(), ctx.stream),
                   device_buffer<float>(rotary.cos.size(), ctx.stream),
                   device_buffer<float>(rotary.sin.size(), ctx.stream)};
  ctx.upload(taps.rows.data(), taps.rows.size(), g.tap_rows.get());
  ctx.upload(taps.weights.data(), taps.weights.size(), g.tap_weights.get());
  ctx.upload(rotary.cos.data(), rotary.cos.size(), g.cos.get());
  ctx.upload(rotary.sin.data(), rotary.sin.size(), g.sin.get());
  return g;
}

void run_block(const forward_context& ctx, const vision_config& config,
               const device_vision_block& block, const image_geometry& geometry, int64_t n,
               float* x) {
  const int64_t hidden = config.hidden_size;
  const cudaStream_t s = ctx.stream;
  device_buffer<bf16> normed(size_t(n * hidden), s);
  kernels::layer_norm_to_bf16(x, n, hidden, block.norm1.weight, block.norm1.bias, layer_norm_eps,
                              normed.get(), s);
  {
    device_buffer<float> qkv(size_t(n * 3 * hidden), s);
    ctx.linear(block.qkv, normed.get(), n, qkv.get(), 3 * hidden, false);
    device_buffer<bf16> qkv_rotated(size_t(n * 3 * hidden), s);
    kernels::vision_rotary_to_bf16(qkv.get(), n, hidden, config.head_dim(), geometry.cos.get(),
                                   geometry.sin.get(), qkv_rotated.get(), s);
    kernels::attention_problem problem;
    problem.q = qkv_rotated.get();
    problem.k = qkv_rotated.get() + hidden;
    problem.v = qkv_rotated.get() + 2 * hidden;
    problem.ldq = problem.ldk = problem.ldv = 3 * hidden;
    problem.out_bf16 = normed.get();  // the attention output, rounded for the proj GEMM
    problem.ldo = hidden;
    problem.tokens = n;
    problem.q_heads = problem.kv_heads = config.num_heads;
    problem.head_dim = config.head_dim();
    problem.scale = 1.0f / std::sqrt(float(config.head_dim()));
    kernels::flash_attention(problem, s);
    ctx.linear(block.proj, normed.get(), n, x, hidden, true);
  }
  // The MLP's inputs carry their Linears' folded LoRA columns (device_linear::folded).
  const int64_t fc1_columns = block.fc1.input_columns(), fc2_columns = block.fc2.input_columns();
  device_buffer<bf16> mlp_input(size_t(n * fc1_columns), s);
  kernels::layer_norm_to_bf16(x, n, hidden, block.norm2.weight, block.norm2.bias, layer_norm_eps,
                              mlp_input.get(), s, fc1_columns);
  ctx.fill_lora_columns(block.fc1, mlp_input.get(), n);
  device_buffer<bf16> activated(size_t(n * fc2_columns), s);
  ctx.linear_gelu(block.fc1, mlp_input.get(), n, activated.get(), true, fc2_columns);
  ctx.fill_lora_columns(block.fc2, activated.get(), n);
  ctx.linear(block.fc2, activated.get(), n, x, hidden, true);
}

// The patch embedding's bf16 input [patches, patch_dim]: the host's fp32 pixel values rounded,
// or (the server's path) made here from the decoded 8-bit picture, resized here to the grid.
device_buffer<bf16> patch_inputs(const forward_context& ctx, const vision_config& config,
                                 const prepared_image& image) {
  const cudaStream_t s = ctx.stream;
  const size_t count = size_t(image.grid.h) * image.grid.w * config.patch_dim();
  device_buffer<bf16> inputs(count, s);
  if (!image.pixel_values.empty()) {
    if (image.pixel_values.size() != count)
      throw std::invalid_argument("encode_image: pixel values do not match the grid");
    device_buffer<float> pixels(count, s);
    ctx.upload(image.pixel_values.data(), count, pixels.get());
    kernels::f32_to_bf16(pixels.get(), inputs.get(), int64_t(count), s);
    return inputs;
  }
  const pixel_normalization& norm = image.normalization;
  const uint32_t patch = norm.patch_size;
  if (patch == 0 || image.picture.pixels.empty() ||
      3 * norm.temporal_patch_size * patch * patch != config.patch_dim() ||
      norm.merge_size != uint32_t(config.spatial_merge_size))
    throw std::invalid_argument("encode_image: the picture does not match the grid");
  const device_buffer<uint8_t> picture =
      upload_resized_picture(ctx, image.picture, image.grid.w * patch, image.grid.h * patch);
  kernels::patchify_args args;
  args.rgb = picture.get();
  args.width = image.grid.w * patch;
  args.grid_h = image.grid.h;
  args.grid_w = image.grid.w;
  args.patch = patch;
  args.merge = norm.merge_size;
  args.temporal = norm.temporal_patch_size;
  for (int c = 0; c < 3; ++c) args.mean[c] = norm.mean[c], args.std[c] = norm.std[c];
  kernels::patchify_to_bf16(args, inputs.get(), s);
  return inputs;
}

}  // namespace

device_buffer<float> encode_image(const forward_context& ctx, const vision_config& config,
                                  const device_vision& weights, const prepared_image& image) {
  const grid_thw& grid = image.grid;
  const int64_t n = int64_t(grid.h) * grid.w, hidden = config.hidden_size;
  const int64_t merge_area = int64_t(config.spatial_merge_size) * config.spatial_merge_size;
  if (grid.t != 1 || n == 0 || n % merge_area != 0)
    throw std::invalid_argument("encode_image: pixel values do not match the grid");
  const cudaStream_t s = ctx.stream;
  const image_geometry geometry = upload_geometry(ctx, config, grid);

  device_buffer<float> x(size_t(n * hidden), s);
  {
    const device_buffer<bf16> pixels = patch_inputs(ctx, config, image);
    ctx.linear(weights.patch_embed, pixels.get(), n, x.get(), hidden, false);
  }
  kernels::add_position_embedding(x.get(), n, hidden, weights.pos_embed, geometry.tap_rows.get(),
                                  geometry.tap_weights.get(), s);
  ctx.report("vision.embeddings", x.get(), n, hidden);

  for (size_t b = 0; b < weights.blocks.size(); ++b) {
    run_block(ctx, config, weights.blocks[b], geometry, n, x.get());
    ctx.report("vision.blocks." + std::to_string(b), x.get(), n, hidden);
  }

  // Merger: LayerNorm per patch, 4 consecutive rows as one vector, fc1, erf-GELU, fc2.
  device_buffer<bf16> normed(size_t(n * hidden), s);
  kernels::layer_norm_to_bf16(x.get(), n, hidden, weights.merger_norm.weight,
                              weights.merger_norm.bias, layer_norm_eps, normed.get(), s);
  const int64_t tokens = n / merge_area, inner = weights.merger_fc1.out;
  device_buffer<bf16> activated(size_t(tokens * inner), s);
  ctx.linear_gelu(weights.merger_fc1, normed.get(), tokens, activated.get(), false);
  device_buffer<float> features(size_t(tokens * config.out_hidden_size), s);
  ctx.linear(weights.merger_fc2, activated.get(), tokens, features.get(), config.out_hidden_size,
             false);
  ctx.report("vision.merger", features.get(), tokens, config.out_hidden_size);
  return features;
}

}  // namespace cua_s1::gpu
