// The CUDA backend: the whole forward on one GPU, weights resident in device memory.
#pragma once

#include <memory>
#include <string>

#include "common/outcome.hpp"
#include "model/backend.hpp"
#include "model/stage_probe.hpp"
#include "model/model_weights.hpp"

namespace cua_s1 {

// Number of usable CUDA devices (0 when there is no driver or no GPU).
int cuda_device_count();

struct cuda_backend_options {
  int device = 0;
  // Language graphs kept (one per exact segment: a whole prompt, a shared prefix or a suffix),
  // and vision graphs (one per image size, at most 4); 0 = eager only.
  size_t graph_cache = 16;
  // Merge the language LoRA into the bf16 weights at load (bench/RESULTS.md: 2.3x faster
  // language prefill, errors still under half the bf16 control's); vision stays unmerged.
  bool merge_language_lora = true;
  // Keep the K/V rows and GDN state of the prompts' common opening (the system text's first GDN
  // chunk) between requests instead of running it in each (prep/shared_prefix.hpp).
  bool reuse_prompt_opening = true;
  // The pass budgets (the server's --max-batch-tokens and --max-batch-patches): requests packed
  // into one pass stay within the rows (the executor keeps passes within both), and a pass at
  // both is run when the backend is made, so that budgets the GPU memory cannot hold fail there.
  size_t max_pass_rows = 8192;
  size_t max_pass_patches = 32768;
  // Intermediate activations (parity tests); with a probe the backend runs the probing plan
  // (gpu/execution_plan.hpp): no graphs, whole prompts one at a time.
  stage_probe probe;
};

// Copies the weights to the GPU and returns a backend running there. Failures (no device, out
// of memory) come back as status 500 with the reason.
outcome<std::unique_ptr<backend>> make_cuda_backend(std::shared_ptr<const model_weights> weights,
                                                    cuda_backend_options options);

inline outcome<std::unique_ptr<backend>> make_cuda_backend(
    std::shared_ptr<const model_weights> weights, int device) {
  cuda_backend_options options;
  options.device = device;
  return make_cuda_backend(std::move(weights), std::move(options));
}

inline outcome<std::unique_ptr<backend>> make_cuda_backend(
    std::shared_ptr<const model_weights> weights, int device, stage_probe probe) {
  cuda_backend_options options;
  options.device = device;
  options.probe = std::move(probe);
  return make_cuda_backend(std::move(weights), std::move(options));
}

}  // namespace cua_s1
