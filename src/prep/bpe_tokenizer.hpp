// Byte-level BPE tokenizer that reads a Hugging Face tokenizer.json (the Qwen3.5 pipeline).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/outcome.hpp"
#include "prep/added_tokens.hpp"
#include "prep/flat_tables.hpp"

namespace cua_s1 {

// Encodes text to token ids exactly like tokenizers 0.23.2 with add_special_tokens=False:
// added tokens split first (special-token spellings in text become those tokens), then NFC,
// the Qwen3.5 Split regex, the byte-level alphabet and merges-rank BPE.
// Thread-safe: encode keeps its caches and scratch buffers per thread.
class bpe_tokenizer {
 public:
  // Reads and checks tokenizer.json; a failure (status 500) names the file and the problem.
  static outcome<bpe_tokenizer> load_file(const std::string& tokenizer_json_path);
  // Same from the file's text; `origin` names it in failures.
  static outcome<bpe_tokenizer> load_json(std::string_view json_text, const std::string& origin);

  std::vector<int32_t> encode(std::string_view utf8) const;
  // Appends the ids of `utf8` to `out`.
  void encode_into(std::string_view utf8, std::vector<int32_t>& out) const;

  // Id of an added token's content or a vocabulary spelling (byte-level form, e.g. "Ġthe").
  std::optional<int32_t> token_to_id(std::string_view token) const;

  size_t vocab_size() const { return vocab_.size(); }
  const std::vector<added_token>& added_tokens() const { return added_; }

 private:
  bpe_tokenizer() = default;
  void encode_text(std::string_view text, std::vector<int32_t>& out) const;
  void encode_pieces(std::string_view text, std::vector<int32_t>& out) const;
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  uint64_t instance_id_ = 0;
  vocab_table vocab_;
  vocab_table added_ids_;
  merge_table merges_;
  std::array<int32_t, 256> byte_ids_{};
  std::array<std::string, 256> byte_spellings_;
  std::vector<added_token> added_;
  added_token_matcher raw_matcher_;         // added tokens with normalized = false
  added_token_matcher normalized_matcher_;  // normalized = true, matched after NFC
  bool nfc_ = false;
  bool ignore_merges_ = false;
};

}  // namespace cua_s1
