// SAX handler over boost::json::basic_parser that splits tokenizer.json into parts.
#include "prep/tokenizer_json_reader.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace cua_s1 {
namespace json = boost::json;
namespace {

// Where the parser is: the skeleton, inside model.vocab, or inside model.merges.
enum class region { skeleton, vocab, merges };

class parts_handler {
 public:
  static constexpr size_t max_object_size = size_t(-1);
  static constexpr size_t max_array_size = size_t(-1);
  static constexpr size_t max_key_size = size_t(-1);
  static constexpr size_t max_string_size = size_t(-1);

  explicit parts_handler(tokenizer_json_parts& parts) : parts_(parts) {}
  const std::string& problem() const { return problem_; }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }

  bool on_object_begin(json::error_code& ec) {
    if (region_ != region::skeleton) return reject_value(ec);
    if (in_model_object() && frames_.back().key == "vocab") {
      begin_value();
      region_ = region::vocab;
      parts_.has_vocab = true;
      parts_.skeleton += "{}";
      return true;
    }
    const bool model = frames_.size() == 1 && !frames_[0].is_array && frames_[0].key == "model";
    begin_value();
    parts_.skeleton += '{';
    frames_.push_back({false, true, model, {}});
    return true;
  }

  bool on_object_end(size_t, json::error_code&) {
    if (region_ == region::vocab) {
      region_ = region::skeleton;
      return true;
    }
    parts_.skeleton += '}';
    frames_.pop_back();
    return true;
  }

  bool on_array_begin(json::error_code& ec) {
    if (region_ == region::vocab) return reject_value(ec);
    if (region_ == region::merges) {
      if (in_pair_) return reject_value(ec);
      in_pair_ = true;
      pair_size_ = 0;
      return true;
    }
    begin_value();
    if (in_model_object() && frames_.back().key == "merges") {
      region_ = region::merges;
      parts_.has_merges = true;
      parts_.skeleton += "[]";
      return true;
    }
    parts_.skeleton += '[';
    frames_.push_back({true, true, false, {}});
    return true;
  }

  bool on_array_end(size_t, json::error_code& ec) {
    if (region_ == region::merges) {
      if (!in_pair_) {
        region_ = region::skeleton;
        return true;
      }
      in_pair_ = false;
      if (pair_size_ != 2) return reject_value(ec);
      parts_.merges.push_back({pair_[0], pair_[1]});
      return true;
    }
    parts_.skeleton += ']';
    frames_.pop_back();
    return true;
  }

  bool on_key_part(json::string_view s, size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    if (region_ == region::vocab) {
      pending_key_ = store(key_);
    } else {
      frame& f = frames_.back();
      if (!f.first) parts_.skeleton += ',';
      f.first = false;
      parts_.skeleton += json::serialize(json::value(json::string_view(key_)));
      parts_.skeleton += ':';
      f.key = key_;
    }
    key_.clear();
    return true;
  }

  bool on_string_part(json::string_view s, size_t, json::error_code&) {
    string_.append(s.data(), s.size());
    return true;
  }
  bool on_string(json::string_view s, size_t, json::error_code& ec) {
    string_.append(s.data(), s.size());
    bool ok = true;
    if (region_ == region::vocab) {
      ok = reject_value(ec);
    } else if (region_ == region::merges) {
      ok = add_merge_string(ec);
    } else {
      begin_value();
      parts_.skeleton += json::serialize(json::value(json::string_view(string_)));
    }
    string_.clear();
    return ok;
  }

  bool on_number_part(json::string_view s, json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t i, json::string_view s, json::error_code& ec) {
    return on_number(s, ec, i, true);
  }
  bool on_uint64(uint64_t, json::string_view s, json::error_code& ec) {
    return on_number(s, ec, 0, false);
  }
  bool on_double(double, json::string_view s, json::error_code& ec) {
    return on_number(s, ec, 0, false);
  }
  bool on_bool(bool b, json::error_code& ec) { return on_literal(b ? "true" : "false", ec); }
  bool on_null(json::error_code& ec) { return on_literal("null", ec); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  // One open container of the skeleton.
  struct frame {
    bool is_array;
    bool first;       // no element written yet
    bool is_model;    // the root's "model" object
    std::string key;  // last key seen (objects)
  };

  bool in_model_object() const { return frames_.size() == 2 && frames_[1].is_model; }

  // Records why a vocab or merges entry has the wrong shape and stops the parser.
  bool reject_value(json::error_code& ec) {
    if (problem_.empty()) {
      problem_ =
          region_ == region::vocab
              ? "vocab entry \"" + std::string(parts_.view(pending_key_)) + "\" has no valid id"
              : "merge " + std::to_string(parts_.merges.size()) +
                    " is neither a pair of strings nor a string";
    }
    ec = json::error::syntax;
    return false;
  }

  // Writes the separator before a value inside a skeleton array.
  void begin_value() {
    if (frames_.empty() || !frames_.back().is_array) return;
    if (!frames_.back().first) parts_.skeleton += ',';
    frames_.back().first = false;
  }

  tokenizer_json_parts::span store(std::string_view s) {
    const tokenizer_json_parts::span span{static_cast<uint32_t>(parts_.arena.size()),
                                          static_cast<uint32_t>(s.size())};
    parts_.arena.append(s);
    return span;
  }

  bool add_merge_string(json::error_code& ec) {
    if (in_pair_) {
      if (pair_size_ >= 2) return reject_value(ec);
      pair_[pair_size_++] = store(string_);
      return true;
    }
    const size_t space = string_.find(' ');
    if (space == std::string::npos) return reject_value(ec);
    const auto left = store(std::string_view(string_).substr(0, space));
    const auto right = store(std::string_view(string_).substr(space + 1));
    parts_.merges.push_back({left, right});
    return true;
  }

  bool on_number(json::string_view s, json::error_code& ec, int64_t value, bool is_int64) {
    number_.append(s.data(), s.size());
    bool ok = true;
    if (region_ == region::vocab) {
      if (!is_int64 || value < 0 || value > INT32_MAX) {
        ok = reject_value(ec);
      } else {
        parts_.vocab.push_back({pending_key_, value});
      }
    } else if (region_ == region::merges) {
      ok = reject_value(ec);
    } else {
      begin_value();
      parts_.skeleton += number_;
    }
    number_.clear();
    return ok;
  }

  bool on_literal(const char* text, json::error_code& ec) {
    if (region_ != region::skeleton) return reject_value(ec);
    begin_value();
    parts_.skeleton += text;
    return true;
  }

  tokenizer_json_parts& parts_;
  std::string problem_;
  region region_ = region::skeleton;
  std::vector<frame> frames_;
  std::string key_, string_, number_;
  tokenizer_json_parts::span pending_key_{};
  tokenizer_json_parts::span pair_[2]{};
  bool in_pair_ = false;
  int pair_size_ = 0;
};

}  // namespace

bool read_tokenizer_json(std::string_view json_text, tokenizer_json_parts& parts,
                         std::string& error) {
  parts = {};
  parts.arena.reserve(json_text.size() / 3);
  parts.vocab.reserve(1 << 18);
  parts.merges.reserve(1 << 19);
  json::basic_parser<parts_handler> parser(json::parse_options{}, parts);
  json::error_code ec;
  parser.write_some(false, json_text.data(), json_text.size(), ec);
  if (!ec && !parser.done()) ec = json::error::incomplete;
  if (ec) {
    error = parser.handler().problem().empty() ? "not valid JSON (" + ec.message() + ")"
                                               : parser.handler().problem();
    return false;
  }
  return true;
}

}  // namespace cua_s1
