// Loads a checkpoint in the upstream layout (base directory + PEFT adapter directory), verified
// against a weights lock, into memory-mapped model_weights.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

#include "common/outcome.hpp"
#include "model/model_weights.hpp"

namespace cua_s1 {

struct weight_sources {
  std::filesystem::path base_dir;     // config.json, model.safetensors.index.json + shards
  std::filesystem::path adapter_dir;  // adapter_config.json, adapter_model.safetensors
  std::filesystem::path lock_file;    // schema cua-s1/weights-lock/v1
  // Called while the files are hashed: bytes verified so far and the total to verify.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Verifies every file against the lock (size, SHA-256; files not in the lock are refused), reads
// and checks config.json and adapter_config.json, maps the shards and validates every tensor's
// name, dtype and shape against the config. Errors (status 500) name the file and the tensor.
outcome<std::shared_ptr<const model_weights>> load_model_weights(const weight_sources& sources);

}  // namespace cua_s1
