// Streaming reader for tokenizer.json: pulls out the big vocab and merges, keeps the rest as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

// The parts of a tokenizer.json document. model.vocab and model.merges are taken out as flat
// arrays (strings in one arena); `skeleton` is the rest of the document as JSON text, with
// model.vocab replaced by {} and model.merges by [].
struct tokenizer_json_parts {
  struct span {
    uint32_t offset;
    uint32_t length;
  };
  struct vocab_entry {
    span spelling;
    int64_t id;
  };
  struct merge_entry {
    span left;
    span right;
  };

  std::string skeleton;
  std::string arena;
  bool has_vocab = false;
  bool has_merges = false;
  std::vector<vocab_entry> vocab;
  std::vector<merge_entry> merges;

  std::string_view view(span s) const { return {arena.data() + s.offset, s.length}; }
};

// Parses `json_text`. On failure returns false and sets `error` (JSON syntax, or a vocab / merges
// entry of the wrong shape).
bool read_tokenizer_json(std::string_view json_text, tokenizer_json_parts& parts,
                         std::string& error);

}  // namespace cua_s1
