// Leftmost-longest added-token matching (tokenizers AddedVocabulary::find_matches semantics).
#include "prep/added_tokens.hpp"

#include <algorithm>
#include <cstring>

#include "prep/unicode_tables.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

// Rust char::is_whitespace is the White_Space property, the same set as our \s flag.
bool is_whitespace(uint32_t cp) { return unicode::flags_of(cp) & unicode::flag_space; }

// Start of the run of whitespace that ends at `end` (tokenizers' lstrip).
size_t strip_left(std::string_view text, size_t begin_limit, size_t end) {
  size_t pos = end;
  while (pos > begin_limit) {
    size_t start = pos - 1;
    while (start > begin_limit && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    const auto d = utf8::decode(text, start);
    if (d.code_point == utf8::invalid || !is_whitespace(d.code_point)) break;
    pos = start;
  }
  return pos;
}

// End of the run of whitespace that starts at `begin` (tokenizers' rstrip).
size_t strip_right(std::string_view text, size_t begin) {
  size_t pos = begin;
  while (pos < text.size()) {
    const auto d = utf8::decode(text, pos);
    if (d.code_point == utf8::invalid || !is_whitespace(d.code_point)) break;
    pos += d.length;
  }
  return pos;
}

}  // namespace

void added_token_matcher::add(std::string_view spelling, int32_t id, bool lstrip, bool rstrip) {
  if (spelling.empty()) return;
  tokens_.push_back({std::string(spelling), id, lstrip, rstrip});
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const entry& a, const entry& b) {
    const auto fa = static_cast<unsigned char>(a.spelling[0]);
    const auto fb = static_cast<unsigned char>(b.spelling[0]);
    return fa != fb ? fa < fb : a.spelling.size() > b.spelling.size();
  });
  std::fill(std::begin(first_byte_), std::end(first_byte_), false);
  std::fill(first_begin_.begin(), first_begin_.end(), 0);
  for (const entry& e : tokens_) {
    const auto f = static_cast<unsigned char>(e.spelling[0]);
    first_byte_[f] = true;
    ++first_begin_[f + 1];
  }
  for (size_t i = 1; i < first_begin_.size(); ++i) first_begin_[i] += first_begin_[i - 1];
}

void added_token_matcher::split(std::string_view text, std::vector<text_segment>& out) const {
  size_t segment_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto f = static_cast<unsigned char>(text[pos]);
    if (!first_byte_[f]) {
      ++pos;
      continue;
    }
    const entry* found = nullptr;
    for (uint32_t i = first_begin_[f]; i < first_begin_[f + 1]; ++i) {
      const entry& e = tokens_[i];
      if (text.size() - pos >= e.spelling.size() &&
          std::memcmp(text.data() + pos, e.spelling.data(), e.spelling.size()) == 0) {
        found = &e;  // longest first, so the first hit is the longest
        break;
      }
    }
    if (!found) {
      ++pos;
      continue;
    }
    size_t begin = pos;
    size_t end = pos + found->spelling.size();
    if (found->lstrip) begin = strip_left(text, segment_start, begin);
    if (found->rstrip) end = strip_right(text, end);
    if (segment_start < begin) out.push_back({segment_start, begin, -1});
    out.push_back({begin, end, found->id});
    segment_start = end;
    pos = end;
  }
  if (segment_start < text.size()) out.push_back({segment_start, text.size(), -1});
}

}  // namespace cua_s1
