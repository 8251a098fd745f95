// The Hopper path of flash_attention (kernels/flash_attention.cu dispatches to it): head size 64
// without a causal mask or a shared prefix (the vision encoder's attention) on warpgroup MMAs.
#pragma once

#include <cuda_runtime.h>

#include "kernels/flash_attention.hpp"

namespace cua_s1::kernels {

// Whether flash_attention_wgmma can run `p` (already normalised: runs set, p.keys = prefix
// keys) on the current device: an sm_90 GPU, this build carrying sm_90a code, head size 64,
// no causal mask, no prefix keys.
bool flash_attention_wgmma_applies(const attention_problem& p);

void flash_attention_wgmma(const attention_problem& p, cudaStream_t stream);

}  // namespace cua_s1::kernels
