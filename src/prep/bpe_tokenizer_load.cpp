// Loading and validating tokenizer.json into a bpe_tokenizer.
#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cstdio>

#include "prep/bpe_tokenizer.hpp"
#include "prep/byte_level.hpp"
#include "prep/nfc.hpp"
#include "prep/qwen_pretokenizer.hpp"
#include "prep/tokenizer_json_reader.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace json = boost::json;
namespace {

std::atomic<uint64_t> next_instance_id{1};

// Thrown inside the loader only; turned into a failure at the boundary.
struct load_error {
  std::string what;
};

[[noreturn]] void fail(std::string what) { throw load_error{std::move(what)}; }

const json::value& member(const json::object& obj, std::string_view key, std::string_view where) {
  const auto* v = obj.if_contains(key);
  if (!v) fail(std::string(where) + " has no \"" + std::string(key) + "\"");
  return *v;
}

const json::object& as_object(const json::value& v, std::string_view where) {
  if (!v.is_object()) fail(std::string(where) + " is not an object");
  return v.get_object();
}

std::string_view as_string(const json::value& v, std::string_view where) {
  if (!v.is_string()) fail(std::string(where) + " is not a string");
  return v.get_string();
}

bool optional_bool(const json::object& obj, std::string_view key, bool fallback,
                   std::string_view where) {
  const auto* v = obj.if_contains(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_bool()) fail(std::string(where) + "." + std::string(key) + " is not a boolean");
  return v->get_bool();
}

// True when key is absent, null or "".
bool empty_string_or_null(const json::object& obj, std::string_view key) {
  const auto* v = obj.if_contains(key);
  return !v || v->is_null() || (v->is_string() && v->get_string().empty());
}

std::string spell(uint32_t cp) {
  std::string s;
  utf8::append(s, cp);
  return s;
}

void check_normalizer(const json::value& v, bool& nfc) {
  if (v.is_null()) return;
  const auto& obj = as_object(v, "normalizer");
  const auto type = as_string(member(obj, "type", "normalizer"), "normalizer.type");
  if (type != "NFC") fail("unsupported normalizer type \"" + std::string(type) + "\" (only NFC)");
  nfc = true;
}

void check_pre_tokenizer(const json::value& v) {
  const std::string expected = "a Sequence of Split(Qwen3.5 regex) and ByteLevel";
  if (v.is_null()) fail("pre_tokenizer is null; expected " + expected);
  const auto& obj = as_object(v, "pre_tokenizer");
  const auto type = as_string(member(obj, "type", "pre_tokenizer"), "pre_tokenizer.type");
  const auto* list = obj.if_contains("pretokenizers");
  if (type != "Sequence" || !list || !list->is_array() || list->get_array().size() != 2) {
    fail("unsupported pre_tokenizer \"" + std::string(type) + "\"; expected " + expected);
  }
  const auto& split = as_object(list->get_array()[0], "pre_tokenizer[0]");
  if (as_string(member(split, "type", "pre_tokenizer[0]"), "type") != "Split") {
    fail("unsupported pre_tokenizer[0]; expected Split");
  }
  const auto& pattern = as_object(member(split, "pattern", "Split"), "Split.pattern");
  const auto* regex = pattern.if_contains("Regex");
  if (!regex || !regex->is_string()) fail("Split.pattern is not a Regex");
  if (regex->get_string() != k_qwen35_split_regex) {
    fail("unsupported Split regex \"" + std::string(regex->get_string()) +
         "\" (only the Qwen3.5 pattern is implemented)");
  }
  const auto behavior = as_string(member(split, "behavior", "Split"), "Split.behavior");
  if (behavior != "Isolated") fail("unsupported Split behavior \"" + std::string(behavior) + "\"");
  if (optional_bool(split, "invert", false, "Split")) fail("unsupported Split invert=true");
  const auto& byte_level = as_object(list->get_array()[1], "pre_tokenizer[1]");
  if (as_string(member(byte_level, "type", "pre_tokenizer[1]"), "type") != "ByteLevel") {
    fail("unsupported pre_tokenizer[1]; expected ByteLevel");
  }
  if (optional_bool(byte_level, "add_prefix_space", true, "ByteLevel")) {
    fail("unsupported ByteLevel add_prefix_space=true");
  }
  if (optional_bool(byte_level, "use_regex", true, "ByteLevel")) {
    fail("unsupported ByteLevel use_regex=true");
  }
}

}  // namespace

outcome<bpe_tokenizer> bpe_tokenizer::load_file(const std::string& tokenizer_json_path) {
  std::FILE* file = std::fopen(tokenizer_json_path.c_str(), "rb");
  if (!file) return failure{500, "tokenizer.json '" + tokenizer_json_path + "': cannot open file"};
  std::string text;
  char chunk[1 << 16];
  size_t got;
  if (std::fseek(file, 0, SEEK_END) == 0) {
    if (const long size = std::ftell(file); size > 0) text.reserve(static_cast<size_t>(size));
    std::fseek(file, 0, SEEK_SET);
  }
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) text.append(chunk, got);
  const bool read_error = std::ferror(file) != 0;
  std::fclose(file);
  if (read_error) return failure{500, "tokenizer.json '" + tokenizer_json_path + "': read error"};
  return load_json(text, tokenizer_json_path);
}

outcome<bpe_tokenizer> bpe_tokenizer::load_json(std::string_view json_text,
                                                const std::string& origin) {
  const std::string prefix = "tokenizer.json '" + origin + "': ";
  tokenizer_json_parts parts;
  std::string problem;
  if (!read_tokenizer_json(json_text, parts, problem)) return failure{500, prefix + problem};
  boost::system::error_code ec;
  const json::value root = json::parse(parts.skeleton, ec);
  if (ec) return failure{500, prefix + "not valid JSON (" + ec.message() + ")"};
  try {
    bpe_tokenizer tok;
    tok.instance_id_ = next_instance_id.fetch_add(1);
    const auto& top = as_object(root, "the document");
    const auto& model = as_object(member(top, "model", "the document"), "model");
    const auto type = as_string(member(model, "type", "model"), "model.type");
    if (type != "BPE") fail("unsupported model type \"" + std::string(type) + "\" (only BPE)");
    if (const auto* d = model.if_contains("dropout"); d && !d->is_null()) {
      fail("unsupported BPE dropout");
    }
    if (!empty_string_or_null(model, "continuing_subword_prefix") ||
        !empty_string_or_null(model, "end_of_word_suffix")) {
      fail("unsupported BPE continuing_subword_prefix / end_of_word_suffix");
    }
    if (optional_bool(model, "byte_fallback", false, "model")) fail("unsupported byte_fallback");
    tok.ignore_merges_ = optional_bool(model, "ignore_merges", false, "model");
    if (!parts.has_vocab) {
      fail(model.contains("vocab") ? "model.vocab is not an object" : "model has no \"vocab\"");
    }
    if (!parts.has_merges) {
      fail(model.contains("merges") ? "model.merges is not an array" : "model has no \"merges\"");
    }

    tok.vocab_.reset(parts.vocab.size());
    for (const auto& entry : parts.vocab) {
      tok.vocab_.insert(parts.view(entry.spelling), static_cast<int32_t>(entry.id));
    }
    for (uint32_t b = 0; b < 256; ++b) {
      tok.byte_spellings_[b] = spell(k_byte_level_alphabet[b]);
      tok.byte_ids_[b] = tok.vocab_.find(tok.byte_spellings_[b]);
      if (tok.byte_ids_[b] < 0) {
        fail("vocab lacks the byte-level token of byte " + std::to_string(b));
      }
    }

    const auto& merges = parts.merges;
    tok.merges_ = merge_table(merges.size());
    // Resolve merges in batches: hash and prefetch first, then look up (the tables are large).
    constexpr size_t batch = 32;
    std::string_view left[batch], right[batch];
    uint64_t hashes[batch][3];
    std::string joined[batch];
    for (size_t first = 0; first < merges.size(); first += batch) {
      const size_t n = std::min(batch, merges.size() - first);
      for (size_t k = 0; k < n; ++k) {
        left[k] = parts.view(merges[first + k].left);
        right[k] = parts.view(merges[first + k].right);
        joined[k].assign(left[k]);
        joined[k].append(right[k]);
        hashes[k][0] = hash_bytes(left[k]);
        hashes[k][1] = hash_bytes(right[k]);
        hashes[k][2] = hash_bytes(joined[k]);
        for (uint64_t h : hashes[k]) tok.vocab_.prefetch(h);
      }
      for (size_t k = 0; k < n; ++k) {
        const int32_t a = tok.vocab_.find(left[k], hashes[k][0]);
        const int32_t b = tok.vocab_.find(right[k], hashes[k][1]);
        const int32_t merged = tok.vocab_.find(joined[k], hashes[k][2]);
        if (a < 0 || b < 0 || merged < 0) {
          fail("merge " + std::to_string(first + k) + " (\"" + std::string(left[k]) + "\", \"" +
               std::string(right[k]) + "\") uses a token outside the vocab");
        }
        tok.merges_.insert(a, b, {static_cast<uint32_t>(first + k), merged});
      }
    }

    check_normalizer(top.contains("normalizer") ? top.at("normalizer") : json::value(), tok.nfc_);
    check_pre_tokenizer(top.contains("pre_tokenizer") ? top.at("pre_tokenizer") : json::value());

    if (const auto* list = top.if_contains("added_tokens"); list && !list->is_null()) {
      if (!list->is_array()) fail("added_tokens is not an array");
      tok.added_ids_.reset(list->get_array().size());
      for (const auto& item : list->get_array()) {
        const auto& obj = as_object(item, "added token");
        added_token t;
        const auto& id = member(obj, "id", "added token");
        if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > INT32_MAX) {
          fail("added token has no valid id");
        }
        t.id = static_cast<int32_t>(id.get_int64());
        t.content = std::string(as_string(member(obj, "content", "added token"), "content"));
        const std::string where = "added token \"" + t.content + "\"";
        if (optional_bool(obj, "single_word", false, where)) {
          fail(where + " uses single_word=true, which is not supported");
        }
        t.lstrip = optional_bool(obj, "lstrip", false, where);
        t.rstrip = optional_bool(obj, "rstrip", false, where);
        t.normalized = optional_bool(obj, "normalized", true, where);
        t.special = optional_bool(obj, "special", false, where);
        if (t.normalized) {
          const std::string spelled = tok.nfc_ ? nfc_normalize(t.content) : t.content;
          tok.normalized_matcher_.add(spelled, t.id, t.lstrip, t.rstrip);
        } else {
          tok.raw_matcher_.add(t.content, t.id, t.lstrip, t.rstrip);
        }
        tok.added_ids_.insert(t.content, t.id);
        tok.added_.push_back(std::move(t));
      }
    }
    return tok;
  } catch (const load_error& e) {
    return failure{500, prefix + e.what};
  } catch (const std::exception& e) {
    return failure{500, prefix + e.what()};
  }
}

}  // namespace cua_s1
