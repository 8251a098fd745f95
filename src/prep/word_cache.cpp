// Open-addressing word cache; cleared wholesale when half full.
#include "prep/word_cache.hpp"

#include <algorithm>

namespace cua_s1 {
namespace {
constexpr size_t k_slots = size_t{1} << 16;
constexpr size_t k_max_entries = k_slots / 2;
}  // namespace

word_cache::word_cache() : slots_(k_slots) {
  keys_.reserve(k_max_entries * 8);
  ids_.reserve(k_max_entries * 2);
}

void word_cache::claim(uint64_t owner) {
  if (owner_ != owner) {
    clear();
    owner_ = owner;
  }
}

void word_cache::clear() {
  if (count_ == 0) return;
  std::fill(slots_.begin(), slots_.end(), slot{});
  keys_.clear();
  ids_.clear();
  count_ = 0;
}

std::span<const int32_t> word_cache::find(uint64_t hash, std::string_view word) const {
  for (size_t i = hash & (k_slots - 1);; i = (i + 1) & (k_slots - 1)) {
    const slot& s = slots_[i];
    if (s.ids_length == 0) return {};
    if (s.hash == hash && s.key_length == word.size() &&
        std::string_view(keys_.data() + s.key_offset, s.key_length) == word) {
      return {ids_.data() + s.ids_offset, s.ids_length};
    }
  }
}

void word_cache::insert(uint64_t hash, std::string_view word, std::span<const int32_t> ids) {
  if (word.size() > k_max_word || ids.empty()) return;
  if (count_ >= k_max_entries) clear();
  for (size_t i = hash & (k_slots - 1);; i = (i + 1) & (k_slots - 1)) {
    slot& s = slots_[i];
    if (s.ids_length != 0) continue;
    s = {hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
         static_cast<uint16_t>(word.size()), static_cast<uint16_t>(ids.size())};
    keys_.append(word);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    ++count_;
    return;
  }
}

}  // namespace cua_s1
