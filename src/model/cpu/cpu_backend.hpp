// The CPU reference backend: the whole spec/model.md forward in fp32 over memory-mapped bf16
// weights, GEMMs through OpenBLAS.
#pragma once

#include <memory>

#include "model/backend.hpp"
#include "model/stage_probe.hpp"
#include "model/model_weights.hpp"

namespace cua_s1 {

// A backend on `threads` threads (OpenBLAS and the delta-rule heads). The vision encoder runs
// once per request and its features serve every question.
std::unique_ptr<backend> make_cpu_backend(std::shared_ptr<const model_weights> weights,
                                          unsigned threads);

// As make_cpu_backend, reporting intermediate activations to `probe` (parity tests).
std::unique_ptr<backend> make_cpu_backend(std::shared_ptr<const model_weights> weights,
                                          unsigned threads, stage_probe probe);

}  // namespace cua_s1
