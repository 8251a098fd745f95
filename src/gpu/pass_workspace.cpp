// A synthetic full-budget pass at startup.
#include "gpu/pass_workspace.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/vision_forward.hpp"
#include "kernels/row_runs.hpp"

namespace cua_s1::gpu {
namespace {

size_t free_mib() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) cudaGetLastError();
  return free >> 20;
}

// Vision over `patches` patches as up to 8 equal images of 2 x w patches (w even, so whole
// merge blocks), zero pixel values; returns their features [patches / 4, out_hidden].
device_buffer<float> encode_synthetic_images(const forward_context& ctx,
                                             const vision_config& config,
                                             const device_vision& weights, int64_t patches) {
  const int64_t images = std::clamp<int64_t>(patches / 4, 1, kernels::max_runs);
  const int64_t width = std::max<int64_t>(2, (patches / images / 2) & ~int64_t(1));
  prepared_image image;
  image.grid = {1, 2, uint32_t(width)};
  image.pixel_values.assign(size_t(2 * width) * config.patch_dim(), 0.0f);
  const image_plan plan = make_image_plan(ctx, config, image);
  image.pixel_values = {};
  device_buffer<uint8_t> input(plan.input_bytes(config), ctx.stream);
  check_cuda(cudaMemsetAsync(input.get(), 0, plan.input_bytes(config), ctx.stream),
             "cudaMemsetAsync");
  const std::vector<encoder_image> pack(size_t(images), encoder_image{&plan, input.get()});
  device_buffer<float> features(
      size_t(images * image_feature_rows(config, plan.grid) * config.out_hidden_size), ctx.stream);
  enqueue_encoder(ctx, config, weights, pack, features.get());
  return features;
}

}  // namespace

void reserve_pass_workspace(const forward_context& ctx, const model_config& config,
                            const device_weights& weights, language_graphs& graphs,
                            int64_t opening, int64_t rows, int64_t patches) {
  if (rows <= 0 || patches <= 0) throw std::invalid_argument("the pass budgets must be positive");
  // Language runs of equal length (the last takes the rest), each over the first positions of
  // one question of token id 0 (1 where 0 is the image pad); from position 0, no image.
  const int64_t runs = std::min<int64_t>(kernels::max_runs, rows);
  const int64_t length = rows / runs, longest = rows - (runs - 1) * length;
  prepared_question question;
  question.input_ids.assign(size_t(longest), config.image_token_id == 0 ? 1 : 0);
  for (auto& axis : question.positions.axes)
    for (int64_t i = 0; i < longest; ++i) axis.push_back(i);
  question.letter_ids = {question.input_ids.front()};
  question.image_start = question.input_ids.size();
  segment part{0, {}, gdn_slot::none, gdn_slot::none, true};
  for (int64_t r = 0; r < runs; ++r) part.lengths.push_back(r + 1 < runs ? length : longest);
  const std::vector<const prepared_question*> questions(size_t(runs), &question);
  try {
    graphs.reserve_rows(config.text, opening + rows, ctx.stream);
    const device_buffer<float> features =
        encode_synthetic_images(ctx, config.vision, weights.vision, patches);
    device_buffer<float> logits(size_t(runs), ctx.stream);
    graphs.enqueue_eagerly(ctx, config, weights.language, questions, part, one_image(nullptr, 0),
                           logits.get());
    check_cuda(cudaStreamSynchronize(ctx.stream), "the startup pass");
  } catch (const std::exception& error) {
    throw std::runtime_error("a pass at the full budgets (--max-batch-tokens " +
                             std::to_string(rows) + ", --max-batch-patches " +
                             std::to_string(patches) + ") failed at startup: " + error.what() +
                             " (" + std::to_string(free_mib()) +
                             " MiB of GPU memory free); lower the budgets");
  }
}

}  // namespace cua_s1::gpu
