// Byte-level BPE merging of one pre-token, with reusable scratch buffers.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "prep/flat_tables.hpp"

namespace cua_s1 {

// Buffers reused across words so merging allocates only while they grow.
struct bpe_scratch {
  struct symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t length;  // 0 once merged into its left neighbour
  };
  struct candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t new_id;
  };
  std::vector<symbol> symbols;
  std::vector<candidate> heap;
};

// Appends the ids of `word` (raw bytes): start from one symbol per byte and repeatedly apply the
// lowest-ranked merge, leftmost first, exactly like tokenizers' Word::merge_all.
void bpe_merge_word(std::string_view word, const std::array<int32_t, 256>& byte_ids,
                    const merge_table& merges, bpe_scratch& scratch, std::vector<int32_t>& out);

}  // namespace cua_s1
