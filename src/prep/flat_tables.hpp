// Open-addressing hash tables for the BPE vocabulary (string -> id) and merges (pair -> rank).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace cua_s1 {

// A fast 64-bit hash of a byte string (8 bytes per step, multiply-xorshift mixing).
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t k = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * k);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  h *= k;
  return h ^ (h >> 32);
}

// Maps token spellings to ids. Spellings live in one arena; capacity is fixed at construction.
class vocab_table {
 public:
  explicit vocab_table(size_t expected = 0) { reset(expected); }

  void reset(size_t expected) {
    const size_t capacity = std::bit_ceil(expected * 2 + 16);
    slots_.assign(capacity, slot{});
    mask_ = capacity - 1;
    arena_.clear();
    size_ = 0;
  }

  // Inserts spelling -> id; returns false (and changes nothing) if the spelling is present.
  bool insert(std::string_view spelling, int32_t id) {
    const uint64_t h = hash_bytes(spelling);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (s.id < 0) {
        s = {h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(spelling.size()), id};
        arena_.append(spelling);
        ++size_;
        return true;
      }
      if (s.hash == h && view(s) == spelling) return false;
    }
  }

  // The id of a spelling, or -1.
  int32_t find(std::string_view spelling) const { return find(spelling, hash_bytes(spelling)); }

  // Same, with the spelling's hash_bytes() already computed.
  int32_t find(std::string_view spelling, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == h && view(s) == spelling) return s.id;
    }
  }

  // Hints the cache about a lookup of hash h that follows soon.
  void prefetch(uint64_t h) const { __builtin_prefetch(&slots_[h & mask_]); }

  size_t size() const { return size_; }

 private:
  struct slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    int32_t id = -1;
  };
  std::string_view view(const slot& s) const { return {arena_.data() + s.offset, s.length}; }

  std::vector<slot> slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Maps an adjacent pair of token ids to its merge rank and the merged token id.
class merge_table {
 public:
  struct merge {
    uint32_t rank;
    int32_t new_id;
  };

  explicit merge_table(size_t expected = 0) {
    const size_t capacity = std::bit_ceil(expected * 2 + 16);
    slots_.assign(capacity, slot{});
    mask_ = capacity - 1;
  }

  // Inserts or replaces the merge of a pair (a later duplicate wins, as in tokenizers).
  void insert(int32_t left, int32_t right, merge m) {
    const uint64_t key = pack(left, right);
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      slot& s = slots_[i];
      if (s.key == k_empty) {
        s = {key, m};
        return;
      }
      if (s.key == key) {
        s.value = m;
        return;
      }
    }
  }

  // The merge of (left, right), or nullptr.
  const merge* find(int32_t left, int32_t right) const {
    const uint64_t key = pack(left, right);
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == k_empty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t k_empty = ~0ull;
  struct slot {
    uint64_t key = k_empty;
    merge value{};
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t mix(uint64_t k) {
    k *= 0x9E3779B97F4A7C15ull;
    return k ^ (k >> 31);
  }

  std::vector<slot> slots_;
  size_t mask_ = 0;
};

}  // namespace cua_s1
