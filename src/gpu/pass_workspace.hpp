// The startup check that a language pass at the full row budget fits in GPU memory: one such pass
// runs once (synthetic tokens, no image), so that a budget too large for the device fails when
// the server starts, not under load; the stream-ordered memory pool then keeps what it needed.
#pragma once

#include <cstdint>

#include "gpu/forward_context.hpp"
#include "gpu/language_graphs.hpp"

namespace cua_s1::gpu {

// Runs a pass of `rows` language rows split into kernels::max_runs runs (the most a pack has),
// after `opening` rows kept in the prompt cache, and waits for it. Throws std::runtime_error
// naming the budget and the memory when it does not fit.
void reserve_pass_workspace(const forward_context& ctx, const model_config& config,
                            const device_language& weights, language_graphs& graphs,
                            int64_t opening, int64_t rows);

}  // namespace cua_s1::gpu
