// Finds added (special) tokens in text the way tokenizers' AddedVocabulary splits on them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

// One added token as tokenizer.json lists it.
struct added_token {
  int32_t id = 0;
  std::string content;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of the input: either an added token (id >= 0) or text to tokenize (id == -1).
struct text_segment {
  size_t begin;
  size_t end;
  int32_t id;
};

// Leftmost-longest matcher over a fixed set of token spellings, with lstrip/rstrip handling.
class added_token_matcher {
 public:
  void add(std::string_view spelling, int32_t id, bool lstrip, bool rstrip);
  bool empty() const { return tokens_.empty(); }

  // Splits text into segments, appending them to `out`.
  void split(std::string_view text, std::vector<text_segment>& out) const;

 private:
  struct entry {
    std::string spelling;
    int32_t id;
    bool lstrip;
    bool rstrip;
  };
  std::vector<entry> tokens_;  // sorted by first byte, then longest first
  std::vector<uint32_t> first_begin_ = std::vector<uint32_t>(257, 0);  // per first byte
  bool first_byte_[256] = {};
};

}  // namespace cua_s1
