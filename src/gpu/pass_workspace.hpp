// The startup check that a pass at the full budgets fits in GPU memory: one synthetic pass (zero
// pixels, token id 0) runs the vision encoder over `patches` patches in up to 8 images and,
// with their features still held, a language pass of `rows` rows in 8 runs (the most a pack
// has), so that budgets too large for the device fail when the server starts, not under load;
// the stream-ordered memory pool then keeps what the pass needed.
#pragma once

#include <cstdint>

#include "gpu/forward_context.hpp"
#include "gpu/language_graphs.hpp"

namespace cua_s1::gpu {

// Runs that pass and waits for it; the prompt cache is grown to `opening` + `rows` rows first.
// Throws std::runtime_error naming the budgets, the error and the free memory when it fails.
void reserve_pass_workspace(const forward_context& ctx, const model_config& config,
                            const device_weights& weights, language_graphs& graphs,
                            int64_t opening, int64_t rows, int64_t patches);

}  // namespace cua_s1::gpu
