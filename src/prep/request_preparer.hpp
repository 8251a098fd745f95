// From a request body to exact model inputs: validation, image decode + preprocessing, prompts,
// token ids, letter ids and M-RoPE positions for every question.
#pragma once

#include <array>
#include <filesystem>
#include <string_view>
#include <vector>

#include "api/decision_request.hpp"
#include "codec/image_decoder.hpp"
#include "codec/rgb_image.hpp"
#include "common/outcome.hpp"
#include "prep/bpe_tokenizer.hpp"
#include "prep/mrope_positions.hpp"
#include "prep/pixel_values.hpp"
#include "prep/processor_files.hpp"

namespace cua_s1 {

struct prepared_question {
  std::vector<int32_t> input_ids;  // the whole prompt, image pads expanded
  mrope_positions positions;
  std::vector<int32_t> letter_ids;  // token ids of A, B, ... for this question's options
  size_t image_start = 0;           // index of the first <|image_pad|>
};

struct prepared_request {
  decision_request request;
  rgb_image image;        // the decoded screenshot (pixels in pixels.picture for the backend)
  prepared_image pixels;  // resized geometry, grid and float32 pixel values (or the picture)
  std::vector<prepared_question> questions;
  size_t input_tokens = 0;  // usage.input_tokens: sum of the prompt lengths
  double decode_seconds = 0;   // base64 + image decoding
  double prepare_seconds = 0;  // resize, pixel values, prompts, tokens, positions
};

// Owns the tokenizer and processor settings of one model directory; thread-safe after load.
class request_preparer {
 public:
  // Reads DIR/config.json, DIR/preprocessor_config.json and DIR/tokenizer.json and checks that
  // the letters A..Z are single tokens and <|image_pad|> is config.image_token_id.
  // `limits` are the image limits of ours beyond the contract's (codec/image_decoder.hpp).
  static outcome<request_preparer> load(const std::filesystem::path& model_dir,
                                        image_limits limits = {});

  // Strict JSON parsing and contract validation of a body (400/422), without the image.
  outcome<decision_request> parse(std::string_view body) const;

  // Image decoding and preprocessing, prompts, token ids and positions (422 failures). With
  // pixel_values_on::backend the request carries the resized picture instead of pixel values.
  outcome<prepared_request> prepare(decision_request request,
                                    pixel_values_on where = pixel_values_on::host) const;

  // parse + prepare: everything the server does before the model runs.
  outcome<prepared_request> prepare(std::string_view body) const;

  const bpe_tokenizer& tokenizer() const { return tokenizer_; }
  const processor_files& files() const { return files_; }

 private:
  request_preparer(processor_files files, bpe_tokenizer tokenizer, image_limits limits)
      : files_(std::move(files)), tokenizer_(std::move(tokenizer)), limits_(limits) {}

  processor_files files_;
  bpe_tokenizer tokenizer_;
  image_limits limits_;
  std::vector<int32_t> head_ids_;  // tokens of the prompt before the image pads
  std::array<int32_t, 26> letter_ids_{};
};

}  // namespace cua_s1
