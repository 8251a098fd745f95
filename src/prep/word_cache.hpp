// A bounded pre-token -> ids cache kept in flat arenas (no allocation per entry).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

class word_cache {
 public:
  static constexpr size_t k_max_word = 128;  // longer pre-tokens are not cached

  word_cache();

  // Drops every entry if the cache belongs to another tokenizer; then it belongs to `owner`.
  void claim(uint64_t owner);

  // The cached ids of `word` (hash = hash_bytes(word)), or an empty span.
  std::span<const int32_t> find(uint64_t hash, std::string_view word) const;

  // Stores ids for word; clears everything first when full.
  void insert(uint64_t hash, std::string_view word, std::span<const int32_t> ids);

 private:
  struct slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0;
    uint32_t ids_offset = 0;
    uint16_t key_length = 0;
    uint16_t ids_length = 0;  // 0 = empty slot
  };
  void clear();

  uint64_t owner_ = 0;
  std::vector<slot> slots_;
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

}  // namespace cua_s1
