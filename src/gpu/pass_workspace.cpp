// A synthetic full-budget language pass at startup.
#include "gpu/pass_workspace.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/row_runs.hpp"

namespace cua_s1::gpu {
namespace {

size_t free_mib() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) cudaGetLastError();
  return free >> 20;
}

}  // namespace

void reserve_pass_workspace(const forward_context& ctx, const model_config& config,
                            const device_language& weights, language_graphs& graphs,
                            int64_t opening, int64_t rows) {
  if (rows <= 0) throw std::invalid_argument("the language row budget must be positive");
  // Runs of equal length (the last takes the rest), each over one question's first positions.
  const int64_t runs = std::min<int64_t>(kernels::max_runs, rows);
  const int64_t length = rows / runs, longest = rows - (runs - 1) * length;
  prepared_question question;
  question.input_ids.assign(size_t(opening + longest), 0);  // any id but the image pad
  if (config.image_token_id == 0) std::fill(question.input_ids.begin(), question.input_ids.end(), 1);
  for (auto& axis : question.positions.axes)
    for (int64_t i = 0; i < opening + longest; ++i) axis.push_back(i);
  question.letter_ids = {question.input_ids.front()};
  question.image_start = question.input_ids.size();
  segment part{opening, {}, gdn_slot::none, gdn_slot::none, true};
  for (int64_t r = 0; r < runs; ++r) part.lengths.push_back(r + 1 < runs ? length : longest);
  const std::vector<const prepared_question*> questions(size_t(runs), &question);
  try {
    graphs.reserve_rows(config.text, opening + rows, ctx.stream);
    device_buffer<float> logits(size_t(runs), ctx.stream);
    graphs.enqueue_eagerly(ctx, config, weights, questions, part, one_image(nullptr, 0),
                           logits.get());
    logits = device_buffer<float>();
    check_cuda(cudaStreamSynchronize(ctx.stream), "the startup pass");
  } catch (const std::exception& error) {
    throw std::runtime_error("a pass of " + std::to_string(rows) +
                             " language rows (--max-batch-tokens) does not fit in GPU memory (" +
                             std::to_string(free_mib()) + " MiB free after the weights): " +
                             error.what() + "; lower --max-batch-tokens");
  }
}

}  // namespace cua_s1::gpu
