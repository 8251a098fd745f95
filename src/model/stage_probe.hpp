// An optional observer of intermediate activations, used by the parity test to measure errors
// stage by stage (vision.embeddings, vision.blocks.N, vision.merger, language.*).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace cua_s1 {

// Called with a row-major fp32 tensor [rows, cols] of the named stage, on the backend's thread.
using stage_probe = std::function<void(const std::string& stage, const float* data, int64_t rows,
                                       int64_t cols)>;

inline void report_stage(const stage_probe* probe, const std::string& stage, const float* data,
                         int64_t rows, int64_t cols) {
  if (probe && *probe) (*probe)(stage, data, rows, cols);
}

}  // namespace cua_s1
