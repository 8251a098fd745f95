// Unicode NFC normalization with the tables tokenizers 0.23.2 applies.
#pragma once

#include <string>
#include <string_view>

namespace cua_s1 {

// True when NFC certainly leaves `text` unchanged (no NFC-sensitive code point in it).
bool nfc_quick_check(std::string_view text);

// The NFC form of `text`. Invalid UTF-8 bytes are passed through unchanged.
std::string nfc_normalize(std::string_view text);

}  // namespace cua_s1
