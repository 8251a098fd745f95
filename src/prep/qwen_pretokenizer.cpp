// Hand-written matcher for the Qwen3.5 pre-tokenization regex (see qwen_pretokenizer.hpp).
#include "prep/qwen_pretokenizer.hpp"

#include <cstdint>

#include "prep/unicode_tables.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

using namespace unicode;

// One decoded character and its regex-relevant flags.
struct ch {
  uint32_t cp;
  uint32_t length;
  uint8_t flags;
};

// ASCII fast path: flags of the 128 ASCII characters, filled from the generated tables.
struct ascii_flags {
  uint8_t f[128];
  ascii_flags() {
    for (uint32_t c = 0; c < 128; ++c) f[c] = flags_of(c);
  }
};
const ascii_flags k_ascii;

inline ch char_at(std::string_view text, size_t pos) {
  const auto b = static_cast<unsigned char>(text[pos]);
  if (b < 0x80) return {b, 1, k_ascii.f[b]};
  const auto d = utf8::decode(text, pos);
  return {d.code_point, d.length, flags_of(d.code_point)};
}

inline bool is_letter_or_mark(uint8_t f) { return f & (flag_letter | flag_mark); }
// [^\s\p{L}\p{M}\p{N}]
inline bool is_other(uint8_t f) {
  return !(f & (flag_space | flag_letter | flag_mark | flag_number));
}
inline bool is_cr_lf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// End of the run of [\p{L}\p{M}] starting at pos.
size_t letter_run_end(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const ch c = char_at(text, pos);
    if (!is_letter_or_mark(c.flags)) break;
    pos += c.length;
  }
  return pos;
}

// Case-insensitive match of one contraction letter as Oniguruma folds it ('ſ' folds to 's').
inline bool folds_to(uint32_t cp, char lower) {
  if (cp == static_cast<uint32_t>(lower) || cp == static_cast<uint32_t>(lower - 'a' + 'A')) {
    return true;
  }
  return lower == 's' && cp == 0x17F;
}

// Length of (?i:'s|'t|'re|'ve|'m|'ll|'d) at pos, 0 if none.
size_t contraction_length(std::string_view text, size_t pos) {
  size_t p = pos + 1;
  if (p >= text.size()) return 0;
  const ch a = char_at(text, p);
  if (folds_to(a.cp, 's') || folds_to(a.cp, 't') || folds_to(a.cp, 'm') || folds_to(a.cp, 'd')) {
    return 1 + a.length;
  }
  p += a.length;
  if (p >= text.size()) return 0;
  const ch b = char_at(text, p);
  if ((folds_to(a.cp, 'r') && folds_to(b.cp, 'e')) ||
      (folds_to(a.cp, 'v') && folds_to(b.cp, 'e')) ||
      (folds_to(a.cp, 'l') && folds_to(b.cp, 'l'))) {
    return 1 + a.length + b.length;
  }
  return 0;
}

}  // namespace

size_t qwen35_piece_end(std::string_view text, size_t pos) {
  const ch c = char_at(text, pos);
  const size_t next = pos + c.length;
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c.cp == '\'') {
    if (const size_t n = contraction_length(text, pos)) return pos + n;
  }
  // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
  if (is_letter_or_mark(c.flags)) return letter_run_end(text, next);
  if (!is_cr_lf(c.cp) && !(c.flags & flag_number) && next < text.size() &&
      is_letter_or_mark(char_at(text, next).flags)) {
    return letter_run_end(text, next);
  }
  // \p{N}
  if (c.flags & flag_number) return next;
  // ' '?[^\s\p{L}\p{M}\p{N}]+[\r\n]*
  size_t other_start = SIZE_MAX;
  if (c.cp == ' ' && next < text.size() && is_other(char_at(text, next).flags)) {
    other_start = next;
  } else if (is_other(c.flags)) {
    other_start = pos;
  }
  if (other_start != SIZE_MAX) {
    size_t p = other_start;
    while (p < text.size()) {
      const ch o = char_at(text, p);
      if (!is_other(o.flags)) break;
      p += o.length;
    }
    while (p < text.size() && (text[p] == '\r' || text[p] == '\n')) ++p;
    return p;
  }
  // c is \s here. Find the whitespace run and its last \r or \n.
  size_t run_end = pos;
  size_t last_cr_lf_end = SIZE_MAX;
  size_t last_char_start = pos;
  while (run_end < text.size()) {
    const ch w = char_at(text, run_end);
    if (!(w.flags & flag_space)) break;
    last_char_start = run_end;
    run_end += w.length;
    if (is_cr_lf(w.cp)) last_cr_lf_end = run_end;
  }
  // \s*[\r\n]+
  if (last_cr_lf_end != SIZE_MAX) return last_cr_lf_end;
  // \s+(?!\S)
  if (run_end == text.size()) return run_end;
  if (last_char_start > pos) return last_char_start;
  // \s+
  return run_end;
}

}  // namespace cua_s1
