// The Qwen3.5 Split pre-tokenizer regex, matched by hand (no regex engine).
#pragma once

#include <cstddef>
#include <string_view>

namespace cua_s1 {

// The one pattern this matcher implements, exactly as Transformers 5.17's Qwen3_5Tokenizer
// writes it into tokenizer.json (Split, behavior Isolated, invert false).
inline constexpr std::string_view k_qwen35_split_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// End (byte offset) of the regex match that starts at `pos` (< text.size()), as Oniguruma's
// leftmost-first backtracking gives it. The pattern matches at every position, so a text is
// split by calling this repeatedly from 0. Invalid UTF-8 bytes count as punctuation.
size_t qwen35_piece_end(std::string_view text, size_t pos);

}  // namespace cua_s1
