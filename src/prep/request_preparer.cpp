// The processor pipeline shared by the server and cua-s1-prepare.
#include "prep/request_preparer.hpp"

#include <chrono>

#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "codec/image_decoder.hpp"
#include "prep/chat_prompt.hpp"

namespace cua_s1 {

outcome<request_preparer> request_preparer::load(const std::filesystem::path& model_dir,
                                                image_limits limits) {
  auto files = read_processor_files(model_dir);
  if (!files) return files.error();
  auto tokenizer = bpe_tokenizer::load_file(files->tokenizer_json.string());
  if (!tokenizer) return tokenizer.error();
  request_preparer preparer(std::move(*files), std::move(*tokenizer), limits);
  const std::string tokenizer_name = preparer.files_.tokenizer_json.string();
  for (int i = 0; i < 26; ++i) {
    std::string letter(1, static_cast<char>('A' + i));
    auto ids = preparer.tokenizer_.encode(letter);
    if (ids.size() != 1)
      return failure{500, tokenizer_name + ": letter " + letter + " is not a single token"};
    preparer.letter_ids_[i] = ids[0];
  }
  auto image_pad = preparer.tokenizer_.token_to_id("<|image_pad|>");
  if (!image_pad || *image_pad != preparer.files_.image_token_id)
    return failure{500, tokenizer_name + ": <|image_pad|> is not config.json image_token_id " +
                            std::to_string(preparer.files_.image_token_id)};
  auto vision_start = preparer.tokenizer_.token_to_id("<|vision_start|>");
  if (!vision_start || *vision_start != preparer.files_.vision_start_token_id)
    return failure{500, tokenizer_name + ": <|vision_start|> is not config.json "
                                         "vision_start_token_id " +
                            std::to_string(preparer.files_.vision_start_token_id)};
  preparer.head_ids_ = preparer.tokenizer_.encode(prompt_head());
  return preparer;
}

outcome<decision_request> request_preparer::parse(std::string_view body) const {
  auto parsed = parse_strict_json(body);
  if (!parsed) return parsed.error();
  return validate_request(std::move(*parsed));
}

outcome<prepared_request> request_preparer::prepare(std::string_view body) const {
  auto request = parse(body);
  if (!request) return request.error();
  return prepare(std::move(*request));
}

outcome<prepared_request> request_preparer::prepare(decision_request request,
                                                    pixel_values_on where) const {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  auto image = decode_image_data_url(request.image_data_url, limits_);
  if (!image) return image.error();
  const auto decoded = clock::now();

  prepared_request prepared;
  prepared.decode_seconds = std::chrono::duration<double>(decoded - started).count();
  prepared.pixels = where == pixel_values_on::backend
                        ? picture_for_backend(std::move(*image), files_.image)  // pixels moved
                        : preprocess_image(*image, files_.image);
  const uint32_t merge = files_.image.merge_size;
  const uint32_t grid_h = prepared.pixels.grid.h;
  const uint32_t grid_w = prepared.pixels.grid.w;
  const size_t image_tokens = size_t(grid_h / merge) * (grid_w / merge);

  for (const auto& question : request.questions) {
    prepared_question q;
    std::vector<int32_t> tail = tokenizer_.encode(prompt_tail(question));
    q.image_start = head_ids_.size();
    const size_t total = head_ids_.size() + image_tokens + tail.size();
    if (total > max_prompt_tokens) return unprocessable("processed prompt exceeds 4096 tokens");
    q.input_ids.reserve(total);
    q.input_ids = head_ids_;
    q.input_ids.insert(q.input_ids.end(), image_tokens, files_.image_token_id);
    q.input_ids.insert(q.input_ids.end(), tail.begin(), tail.end());
    q.positions = compute_mrope_positions(q.image_start, grid_h, grid_w, merge, tail.size());
    q.letter_ids.assign(letter_ids_.begin(), letter_ids_.begin() + question.keys.size());
    prepared.input_tokens += total;
    prepared.questions.push_back(std::move(q));
  }
  prepared.prepare_seconds = std::chrono::duration<double>(clock::now() - decoded).count();
  request.image_data_url = std::string();  // the encoded image is no longer needed
  prepared.request = std::move(request);
  prepared.image = std::move(*image);  // without its pixels when they went to pixels.picture
  return prepared;
}

}  // namespace cua_s1
