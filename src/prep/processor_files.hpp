// Reading the processor-relevant files of an upstream model directory.
#pragma once

#include <cstdint>
#include <filesystem>

#include "common/outcome.hpp"
#include "prep/processor_config.hpp"

namespace cua_s1 {

struct processor_files {
  processor_config image;             // from preprocessor_config.json
  int32_t image_token_id = 0;         // config.json image_token_id
  int32_t vision_start_token_id = 0;  // config.json vision_start_token_id
  std::filesystem::path tokenizer_json;
};

// Reads DIR/config.json and DIR/preprocessor_config.json and locates DIR/tokenizer.json.
// Settings this implementation does not support (no resize, other rescale factor, ...) are
// refused. Failures carry status 500 and a detail naming the file and the field.
outcome<processor_files> read_processor_files(const std::filesystem::path& model_dir);

}  // namespace cua_s1
