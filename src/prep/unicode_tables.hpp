// Unicode data for the tokenizer: regex character classes and NFC tables (generated .cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cua_s1::unicode {

// Per-code-point flags, as tokenizers 0.23.2 (Oniguruma regex, its NFC tables) sees them.
enum : uint8_t {
  flag_letter = 1,          // \p{L}
  flag_mark = 2,            // \p{M}
  flag_number = 4,          // \p{N}
  flag_space = 8,           // \s
  flag_nfc_sensitive = 16,  // may change under NFC (decomposes, ccc > 0 or composes with previous)
};

struct ccc_entry {
  uint32_t code_point;
  uint8_t ccc;
};
struct decomposition_entry {
  uint32_t code_point;
  uint16_t offset;  // into k_decomposition_data
  uint8_t length;
};
struct composition_entry {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

extern const uint16_t k_flag_stage1[0x110000 >> 8];
extern const uint8_t k_flag_stage2[];
extern const ccc_entry k_ccc[];
extern const size_t k_ccc_size;
extern const decomposition_entry k_decompositions[];
extern const size_t k_decompositions_size;
extern const uint32_t k_decomposition_data[];
extern const composition_entry k_compositions[];
extern const size_t k_compositions_size;

// Flags of a code point; 0 for values above U+10FFFF.
inline uint8_t flags_of(uint32_t code_point) {
  if (code_point >= 0x110000) return 0;
  return k_flag_stage2[(static_cast<size_t>(k_flag_stage1[code_point >> 8]) << 8) |
                       (code_point & 0xFF)];
}

}  // namespace cua_s1::unicode
