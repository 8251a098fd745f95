// Vision forward: patch GEMM + bias + interpolated positions, blocks (LayerNorm, qkv, 2-D rotary,
// attention, proj, MLP with LoRA), merger; the per-size plan (geometry, resize taps) apart.
#include "gpu/vision_forward.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "gpu/picture_resize.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/flash_attention.hpp"
#include "kernels/norms.hpp"
#include "kernels/vision.hpp"
#include "model/rope.hpp"
#include "model/position_taps.hpp"

namespace cua_s1::gpu {
namespace {

constexpr float layer_norm_eps = 1e-6f;

// One block over the rows of every image of the pass (`runs`: one per image, attention within
// each); `cos` / `sin` hold every row's rotary angles.
void run_block(const forward_context& ctx, const vision_config& config,
               const device_vision_block& block, const float* cos, const float* sin,
               const kernels::row_runs& runs, float* x) {
  const int64_t hidden = config.hidden_size, n = runs.rows();
  const cudaStream_t s = ctx.stream;
  device_buffer<bf16> normed(size_t(n * hidden), s);
  kernels::layer_norm_to_bf16(x, n, hidden, block.norm1.weight, block.norm1.bias, layer_norm_eps,
                              normed.get(), s);
  {
    device_buffer<float> qkv(size_t(n * 3 * hidden), s);
    ctx.linear(block.qkv, normed.get(), n, qkv.get(), 3 * hidden, false);
    device_buffer<bf16> qkv_rotated(size_t(n * 3 * hidden), s);
    kernels::vision_rotary_to_bf16(qkv.get(), n, hidden, config.head_dim(), cos, sin,
                                   qkv_rotated.get(), s);
    kernels::attention_problem problem;
    problem.q = qkv_rotated.get();
    problem.k = qkv_rotated.get() + hidden;
    problem.v = qkv_rotated.get() + 2 * hidden;
    problem.ldq = problem.ldk = problem.ldv = 3 * hidden;
    problem.out_bf16 = normed.get();  // the attention output, rounded for the proj GEMM
    problem.ldo = hidden;
    problem.tokens = n;
    problem.runs = runs;
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

// The patch embedding's bf16 input [patches, patch_dim] into `inputs`, from the uploaded input:
// the host's fp32 pixel values rounded, or (the server's path) made here from the 8-bit picture,
// resized here to the grid.
void patch_inputs(const forward_context& ctx, const vision_config& config, const image_plan& plan,
                  const void* input, bf16* inputs) {
  const cudaStream_t s = ctx.stream;
  const size_t count = size_t(plan.patches()) * config.patch_dim();
  if (plan.from_values) {
    kernels::f32_to_bf16(static_cast<const float*>(input), inputs, int64_t(count), s);
    return;
  }
  const pixel_normalization& norm = plan.normalization;
  device_buffer<uint8_t> resized;
  kernels::patchify_args args;
  args.rgb = plan.resizer->resize(ctx, static_cast<const uint8_t*>(input), resized);
  args.width = plan.grid.w * norm.patch_size;
  args.grid_h = plan.grid.h;
  args.grid_w = plan.grid.w;
  args.patch = norm.patch_size;
  args.merge = norm.merge_size;
  args.temporal = norm.temporal_patch_size;
  for (int c = 0; c < 3; ++c) args.mean[c] = norm.mean[c], args.std[c] = norm.std[c];
  kernels::patchify_to_bf16(args, inputs, s);
}

}  // namespace

size_t image_plan::input_bytes(const vision_config& config) const {
  return from_values ? size_t(patches()) * config.patch_dim() * sizeof(float)
                     : size_t(picture_width) * picture_height * 3;
}

bool image_plan::fits(const prepared_image& image) const {
  const bool values = !image.pixel_values.empty();
  return values == from_values && image.grid.t == grid.t && image.grid.h == grid.h &&
         image.grid.w == grid.w &&
         (values || (image.picture.width == picture_width &&
                     image.picture.height == picture_height));
}

int64_t image_feature_rows(const vision_config& config, const grid_thw& grid) {
  return int64_t(grid.h) * grid.w / (int64_t(config.spatial_merge_size) * config.spatial_merge_size);
}

image_plan make_image_plan(const forward_context& ctx, const vision_config& config,
                           const prepared_image& image) {
  const grid_thw& grid = image.grid;
  const int64_t n = int64_t(grid.h) * grid.w;
  const int64_t merge_area = int64_t(config.spatial_merge_size) * config.spatial_merge_size;
  if (grid.t != 1 || n == 0 || n % merge_area != 0)
    throw std::invalid_argument("encode_image: pixel values do not match the grid");
  image_plan plan;
  plan.grid = grid;
  plan.from_values = !image.pixel_values.empty();
  if (plan.from_values) {
    if (image.pixel_values.size() != size_t(n) * config.patch_dim())
      throw std::invalid_argument("encode_image: pixel values do not match the grid");
  } else {
    const pixel_normalization& norm = image.normalization;
    const uint32_t patch = norm.patch_size;
    const rgb_image& picture = image.picture;
    if (patch == 0 || picture.width == 0 || picture.height == 0 ||
        picture.pixels.size() != size_t(picture.width) * picture.height * 3 ||
        3 * norm.temporal_patch_size * patch * patch != config.patch_dim() ||
        norm.merge_size != uint32_t(config.spatial_merge_size))
      throw std::invalid_argument("encode_image: the picture does not match the grid");
    plan.picture_width = picture.width;
    plan.picture_height = picture.height;
    plan.normalization = norm;
    plan.resizer.emplace(ctx, picture.width, picture.height, grid.w * patch, grid.h * patch);
  }
  const cudaStream_t s = ctx.stream;
  const position_taps taps =
      vision_position_taps(grid, config.position_side(), config.spatial_merge_size);
  const rotary_table rotary = vision_rotary(grid.h, grid.w, config.spatial_merge_size,
                                            config.head_dim(), config.rope_theta);
  plan.tap_rows = device_buffer<int32_t>(taps.rows.size(), s);
  plan.tap_weights = device_buffer<float>(taps.weights.size(), s);
  plan.cos = device_buffer<float>(rotary.cos.size(), s);
  plan.sin = device_buffer<float>(rotary.sin.size(), s);
  ctx.upload(taps.rows.data(), taps.rows.size(), plan.tap_rows.get());
  ctx.upload(taps.weights.data(), taps.weights.size(), plan.tap_weights.get());
  ctx.upload(rotary.cos.data(), rotary.cos.size(), plan.cos.get());
  ctx.upload(rotary.sin.data(), rotary.sin.size(), plan.sin.get());
  return plan;
}

void upload_image(const forward_context& ctx, const image_plan& plan, const prepared_image& image,
                  void* input) {
  if (!plan.fits(image)) throw std::logic_error("upload_image: the image does not fit the plan");
  if (plan.from_values)
    ctx.upload(image.pixel_values.data(), image.pixel_values.size(), static_cast<float*>(input));
  else
    ctx.upload_picture(image.picture.pixels.data(), image.picture.pixels.size(),
                       static_cast<uint8_t*>(input));
}

void enqueue_encoder(const forward_context& ctx, const vision_config& config,
                     const device_vision& weights, const image_plan& plan, const void* input,
                     float* features) {
  const encoder_image one[] = {{&plan, input}};
  enqueue_encoder(ctx, config, weights, one, features);
}

void enqueue_encoder(const forward_context& ctx, const vision_config& config,
                     const device_vision& weights, std::span<const encoder_image> images,
                     float* features) {
  const int64_t hidden = config.hidden_size;
  const cudaStream_t s = ctx.stream;
  std::vector<int64_t> patches;
  for (const encoder_image& image : images) patches.push_back(image.plan->patches());
  const kernels::row_runs runs = kernels::runs_of(patches);  // 1 to 8 images
  const int64_t n = runs.rows();
  device_buffer<float> x(size_t(n * hidden), s);
  {
    device_buffer<bf16> pixels(size_t(n) * config.patch_dim(), s);
    for (size_t i = 0; i < images.size(); ++i)
      patch_inputs(ctx, config, *images[i].plan, images[i].input,
                   pixels.get() + runs.bounds[i] * config.patch_dim());
    ctx.linear(weights.patch_embed, pixels.get(), n, x.get(), hidden, false);
  }
  for (size_t i = 0; i < images.size(); ++i)
    kernels::add_position_embedding(x.get() + runs.bounds[i] * hidden, patches[i], hidden,
                                    weights.pos_embed, images[i].plan->tap_rows.get(),
                                    images[i].plan->tap_weights.get(), s);
  ctx.report("vision.embeddings", x.get(), n, hidden);

  // Every row's rotary angles: the plan's own for one image, else the plans' back to back.
  const float* cos = images.front().plan->cos.get();
  const float* sin = images.front().plan->sin.get();
  device_buffer<float> packed_cos, packed_sin;
  if (images.size() > 1) {
    const size_t per_row = images.front().plan->cos.size() / size_t(patches.front());
    packed_cos = device_buffer<float>(size_t(n) * per_row, s);
    packed_sin = device_buffer<float>(size_t(n) * per_row, s);
    for (size_t i = 0; i < images.size(); ++i) {
      const size_t offset = size_t(runs.bounds[i]) * per_row, count = size_t(patches[i]) * per_row;
      check_cuda(cudaMemcpyAsync(packed_cos.get() + offset, images[i].plan->cos.get(),
                                 count * sizeof(float), cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync (rotary)");
      check_cuda(cudaMemcpyAsync(packed_sin.get() + offset, images[i].plan->sin.get(),
                                 count * sizeof(float), cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync (rotary)");
    }
    cos = packed_cos.get();
    sin = packed_sin.get();
  }

  for (size_t b = 0; b < weights.blocks.size(); ++b) {
    run_block(ctx, config, weights.blocks[b], cos, sin, runs, x.get());
    ctx.report("vision.blocks." + std::to_string(b), x.get(), n, hidden);
  }

  // Merger: LayerNorm per patch, 4 consecutive rows (of one image) as one vector, fc1,
  // erf-GELU, fc2.
  device_buffer<bf16> normed(size_t(n * hidden), s);
  kernels::layer_norm_to_bf16(x.get(), n, hidden, weights.merger_norm.weight,
                              weights.merger_norm.bias, layer_norm_eps, normed.get(), s);
  int64_t tokens = 0;
  for (const encoder_image& image : images) tokens += image_feature_rows(config, image.plan->grid);
  const int64_t inner = weights.merger_fc1.out;
  device_buffer<bf16> activated(size_t(tokens * inner), s);
  ctx.linear_gelu(weights.merger_fc1, normed.get(), tokens, activated.get(), false);
  ctx.linear(weights.merger_fc2, activated.get(), tokens, features, config.out_hidden_size, false);
  ctx.report("vision.merger", features, tokens, config.out_hidden_size);
}

device_buffer<float> encode_image(const forward_context& ctx, const vision_config& config,
                                  const device_vision& weights, const prepared_image& image) {
  const image_plan plan = make_image_plan(ctx, config, image);
  device_buffer<uint8_t> input(plan.input_bytes(config), ctx.stream);
  upload_image(ctx, plan, image, input.get());
  device_buffer<float> features(
      size_t(image_feature_rows(config, plan.grid) * config.out_hidden_size), ctx.stream);
  enqueue_encoder(ctx, config, weights, plan, input.get(), features.get());
  return features;
}

}  // namespace cua_s1::gpu
