// bpe_tokenizer encoding: added-token split, NFC, Qwen3.5 pre-tokenization, cached BPE.
#include "prep/bpe_tokenizer.hpp"

#include "prep/bpe_merge.hpp"
#include "prep/nfc.hpp"
#include "prep/qwen_pretokenizer.hpp"
#include "prep/word_cache.hpp"

namespace cua_s1 {
namespace {

// Per-thread caches and buffers, so encode() is const and allocation-light.
struct encode_state {
  word_cache cache;
  bpe_scratch scratch;
  std::vector<text_segment> segments;
  std::vector<text_segment> normalized_segments;
  std::string normalized;
  std::string spelled;
};

encode_state& thread_state() {
  thread_local encode_state state;
  return state;
}

}  // namespace

std::vector<int32_t> bpe_tokenizer::encode(std::string_view utf8) const {
  std::vector<int32_t> ids;
  ids.reserve(utf8.size() / 3 + 8);
  encode_into(utf8, ids);
  return ids;
}

void bpe_tokenizer::encode_into(std::string_view utf8, std::vector<int32_t>& out) const {
  encode_state& state = thread_state();
  state.cache.claim(instance_id_);
  if (raw_matcher_.empty()) {
    encode_text(utf8, out);
    return;
  }
  // Copy the segments: encode_text may reuse state buffers.
  std::vector<text_segment>& segments = state.segments;
  segments.clear();
  raw_matcher_.split(utf8, segments);
  for (size_t i = 0; i < segments.size(); ++i) {
    const text_segment s = state.segments[i];
    if (s.id >= 0) {
      out.push_back(s.id);
    } else {
      encode_text(utf8.substr(s.begin, s.end - s.begin), out);
    }
  }
}

// Normalizes one stretch of text between added tokens and tokenizes it.
void bpe_tokenizer::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  encode_state& state = thread_state();
  std::string_view normalized = text;
  if (nfc_ && !nfc_quick_check(text)) {
    state.normalized = nfc_normalize(text);
    normalized = state.normalized;
  }
  if (normalized_matcher_.empty()) {
    encode_pieces(normalized, out);
    return;
  }
  state.normalized_segments.clear();
  normalized_matcher_.split(normalized, state.normalized_segments);
  for (size_t i = 0; i < state.normalized_segments.size(); ++i) {
    const text_segment s = state.normalized_segments[i];
    if (s.id >= 0) {
      out.push_back(s.id);
    } else {
      encode_pieces(normalized.substr(s.begin, s.end - s.begin), out);
    }
  }
}

// Splits normalized text with the Qwen3.5 regex and BPE-encodes each piece.
void bpe_tokenizer::encode_pieces(std::string_view text, std::vector<int32_t>& out) const {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = qwen35_piece_end(text, pos);
    encode_word(text.substr(pos, end - pos), out);
    pos = end;
  }
}

void bpe_tokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  encode_state& state = thread_state();
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (ignore_merges_) {
    state.spelled.clear();
    for (char c : word) state.spelled += byte_spellings_[static_cast<unsigned char>(c)];
    if (const int32_t id = vocab_.find(state.spelled); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const uint64_t hash = hash_bytes(word);
  if (const auto hit = state.cache.find(hash, word); !hit.empty()) {
    out.insert(out.end(), hit.begin(), hit.end());
    return;
  }
  const size_t before = out.size();
  bpe_merge_word(word, byte_ids_, merges_, state.scratch, out);
  state.cache.insert(hash, word,
                     std::span<const int32_t>(out.data() + before, out.size() - before));
}

std::optional<int32_t> bpe_tokenizer::token_to_id(std::string_view token) const {
  if (const int32_t id = added_ids_.find(token); id >= 0) return id;
  if (const int32_t id = vocab_.find(token); id >= 0) return id;
  return std::nullopt;
}

}  // namespace cua_s1
