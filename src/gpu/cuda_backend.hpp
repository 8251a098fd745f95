// The CUDA backend: the whole forward on one GPU, weights resident in device memory.
#pragma once

#include <memory>
#include <string>

#include "common/outcome.hpp"
#include "model/backend.hpp"
#include "model/cpu/stage_probe.hpp"
#include "model/model_weights.hpp"

namespace cua_s1 {

// Number of usable CUDA devices (0 when there is no driver or no GPU).
int cuda_device_count();

// Copies the weights to GPU `device` and returns a backend running there. Failures (no device,
// out of memory) come back as status 500 with the reason.
outcome<std::unique_ptr<backend>> make_cuda_backend(std::shared_ptr<const model_weights> weights,
                                                    int device);

// As make_cuda_backend, reporting intermediate activations to `probe` (parity tests).
outcome<std::unique_ptr<backend>> make_cuda_backend(std::shared_ptr<const model_weights> weights,
                                                    int device, cpu::stage_probe probe);

}  // namespace cua_s1
