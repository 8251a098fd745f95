// The GPT-2 byte-level alphabet: each byte as the printable code point that spells it.
#pragma once

#include <array>
#include <cstdint>

namespace cua_s1 {

// Code point that byte b is spelled with in byte-level BPE vocabularies (bytes_to_unicode).
inline constexpr std::array<uint32_t, 256> k_byte_level_alphabet = [] {
  std::array<uint32_t, 256> table{};
  uint32_t extra = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    table[b] = printable ? b : extra++;
  }
  return table;
}();

}  // namespace cua_s1
