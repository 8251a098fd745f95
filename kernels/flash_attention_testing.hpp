// For tests and benchmarks only: flash attention on the portable mma.sync kernel where
// flash_attention would take the Hopper wgmma one, so that the two can be compared and timed
// on the same GPU (tests/cuda_kernels_test.cpp, bench/attention_bench.cpp).
#pragma once

#include <cuda_runtime.h>

#include "kernels/flash_attention.hpp"

namespace cua_s1::kernels {

// flash_attention (same checks and results off Hopper) on the portable kernel on every GPU.
void flash_attention_portable(const attention_problem& problem, cudaStream_t stream);

}  // namespace cua_s1::kernels
