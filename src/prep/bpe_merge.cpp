// Priority-queue BPE merge (the algorithm of tokenizers' models/bpe/word.rs, reimplemented).
#include "prep/bpe_merge.hpp"

#include <algorithm>

namespace cua_s1 {
namespace {

// Heap order: the top is the lowest rank, then the lowest position.
struct later {
  bool operator()(const bpe_scratch::candidate& a, const bpe_scratch::candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

}  // namespace

void bpe_merge_word(std::string_view word, const std::array<int32_t, 256>& byte_ids,
                    const merge_table& merges, bpe_scratch& scratch, std::vector<int32_t>& out) {
  const size_t n = word.size();
  if (n == 1) {
    out.push_back(byte_ids[static_cast<unsigned char>(word[0])]);
    return;
  }
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  symbols.resize(n);
  heap.clear();
  for (size_t i = 0; i < n; ++i) {
    symbols[i] = {byte_ids[static_cast<unsigned char>(word[i])], static_cast<int32_t>(i) - 1,
                  i + 1 < n ? static_cast<int32_t>(i + 1) : -1, 1};
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    if (const auto* m = merges.find(symbols[i].id, symbols[i + 1].id)) {
      heap.push_back({m->rank, static_cast<uint32_t>(i), m->new_id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), later{});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later{});
    const auto top = heap.back();
    heap.pop_back();
    auto& current = symbols[top.pos];
    if (current.length == 0 || current.next < 0) continue;
    const int32_t next_pos = current.next;
    const auto right = symbols[next_pos];
    const auto* check = merges.find(current.id, right.id);
    if (!check || check->new_id != top.new_id) continue;  // stale entry
    current.id = top.new_id;
    current.length += right.length;
    current.next = right.next;
    symbols[next_pos].length = 0;
    if (right.next >= 0) symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (current.prev >= 0) {
      if (const auto* m = merges.find(symbols[current.prev].id, current.id)) {
        heap.push_back({m->rank, static_cast<uint32_t>(current.prev), m->new_id});
        std::push_heap(heap.begin(), heap.end(), later{});
      }
    }
    if (current.next >= 0) {
      if (const auto* m = merges.find(current.id, symbols[current.next].id)) {
        heap.push_back({m->rank, top.pos, m->new_id});
        std::push_heap(heap.begin(), heap.end(), later{});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace cua_s1
