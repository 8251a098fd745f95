// Test-only fault injection for the real server process (environment CUA_S1_FAULT_INJECTION), so
// that tests can drive the fatal-device-error path without a broken GPU.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "common/outcome.hpp"
#include "model/backend.hpp"

namespace cua_s1 {

inline constexpr const char* fault_injection_variable = "CUA_S1_FAULT_INJECTION";

// "sticky-error-after:N" (N >= 1): the number of requests answered before the injected error.
outcome<size_t> parse_fault_injection(std::string_view spec);

// A backend that answers like `model` for `runs` requests (the warmup is one), then fails every
// request and reports itself unusable, as after a sticky CUDA error. In a pass that crosses the
// count, the requests within it are answered and the rest fail.
std::unique_ptr<backend> sticky_error_after(std::unique_ptr<backend> model, size_t runs);

}  // namespace cua_s1
