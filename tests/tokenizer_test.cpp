// Tests of bpe_tokenizer against Transformers 5.17 reference ids (tests/fixtures/tokenizer).
#define BOOST_TEST_MODULE tokenizer_test
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "prep/bpe_tokenizer.hpp"
#include "prep/nfc.hpp"
#include "prep/qwen_pretokenizer.hpp"

namespace json = boost::json;
using cua_s1::bpe_tokenizer;

namespace {

const std::string k_dir = std::string(CUA_S1_BINARY_DIR) + "/fixtures/qwen35/";

const bpe_tokenizer& qwen35() {
  static const bpe_tokenizer tok = [] {
    auto loaded = bpe_tokenizer::load_file(k_dir + "tokenizer.json");
    if (!loaded) {
      BOOST_FAIL(loaded.error().detail);
    }
    return std::move(loaded).value();
  }();
  return tok;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ids_text(const std::vector<int32_t>& ids, size_t limit = 40) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < limit; ++i) out += std::to_string(ids[i]) + " ";
  if (ids.size() > limit) out += "...";
  return out;
}

// A minimal valid tokenizer.json text with a few bytes of vocab, to edit for error cases.
std::string tiny_json(const std::string& regex_json,
                      const std::string& normalizer = "{\"type\":\"NFC\"}") {
  json::object vocab;
  // bytes_to_unicode spellings of all 256 bytes.
  int32_t next_id = 0;
  for (uint32_t b = 0, extra = 256; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = printable ? b : extra++;
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    vocab[s] = next_id++;
  }
  vocab["ab"] = next_id++;
  vocab["abc"] = next_id++;
  vocab["xyz"] = next_id++;  // reachable by no merge
  return "{\"added_tokens\":[{\"id\":300,\"content\":\"<s>\",\"single_word\":false,"
         "\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
         "\"normalizer\":" +
         normalizer +
         ",\"pre_tokenizer\":{\"type\":\"Sequence\","
         "\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":" +
         regex_json +
         "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
         "\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]},"
         "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"ignore_merges\":false,"
         "\"vocab\":" +
         json::serialize(vocab) + ",\"merges\":[[\"a\",\"b\"],\"ab c\"]}}";
}

const std::string k_regex_json = json::serialize(json::value(cua_s1::k_qwen35_split_regex));

}  // namespace

BOOST_AUTO_TEST_CASE(letters_are_single_tokens_32_to_57) {
  for (int i = 0; i < 26; ++i) {
    const std::string letter(1, static_cast<char>('A' + i));
    const auto ids = qwen35().encode(letter);
    BOOST_TEST_REQUIRE(ids.size() == 1u, letter);
    BOOST_TEST(ids[0] == 32 + i, letter);
  }
}

BOOST_AUTO_TEST_CASE(special_token_ids_match_the_contract) {
  const std::pair<const char*, int32_t> expected[] = {
      {"<|endoftext|>", 248044},    {"<|im_start|>", 248045},   {"<|im_end|>", 248046},
      {"<|vision_start|>", 248053}, {"<|vision_end|>", 248054}, {"<|vision_pad|>", 248055},
      {"<|image_pad|>", 248056},    {"<|video_pad|>", 248057},  {"<think>", 248068},
      {"</think>", 248069}};
  for (const auto& [text, id] : expected) {
    BOOST_TEST(qwen35().encode(text) == std::vector<int32_t>{id}, text);
    BOOST_TEST(qwen35().token_to_id(text).value_or(-1) == id, text);
  }
  BOOST_TEST(qwen35().encode("\n") == std::vector<int32_t>{198});
  BOOST_TEST(qwen35().encode("\n\n") == std::vector<int32_t>{271});
  BOOST_TEST((qwen35().encode("user\n") == std::vector<int32_t>{846, 198}));
  BOOST_TEST((qwen35().encode("<|im_start|>user\n<|image_pad|><|image_pad|>") ==
              std::vector<int32_t>{248045, 846, 198, 248056, 248056}));
  BOOST_TEST(qwen35().added_tokens().size() == 33u);
  BOOST_TEST(!qwen35().token_to_id("<|no_such_token|>").has_value());
  BOOST_TEST(qwen35().encode("").empty());
}

BOOST_AUTO_TEST_CASE(corpus_matches_transformers_5_17) {
  const std::string corpus = read_file(k_dir + "corpus.jsonl");
  BOOST_TEST_REQUIRE(!corpus.empty(), "corpus.jsonl missing in " << k_dir);
  std::istringstream lines(corpus);
  std::string line;
  size_t total = 0, matched = 0, nfc_total = 0, nfc_matched = 0;
  size_t pieces_total = 0, pieces_matched = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const json::object item = json::parse(line).as_object();
    const std::string text(item.at("text").as_string());
    std::vector<int32_t> expected;
    for (const auto& v : item.at("ids").as_array())
      expected.push_back(static_cast<int32_t>(v.as_int64()));
    const auto got = qwen35().encode(text);
    ++total;
    if (got == expected) {
      ++matched;
    } else {
      BOOST_ERROR("kind " << item.at("kind").as_string() << " line " << total << " text "
                          << json::serialize(item.at("text")).substr(0, 200) << "\n expected "
                          << ids_text(expected) << "\n got      " << ids_text(got));
    }
    if (const auto* pieces = item.if_contains("pieces")) {
      ++pieces_total;
      const std::string normalized = cua_s1::nfc_normalize(text);
      std::vector<int64_t> lengths;
      for (size_t pos = 0; pos < normalized.size();) {
        const size_t end = cua_s1::qwen35_piece_end(normalized, pos);
        lengths.push_back(static_cast<int64_t>(end - pos));
        pos = end;
      }
      std::vector<int64_t> expected_lengths;
      for (const auto& v : pieces->as_array()) expected_lengths.push_back(v.as_int64());
      if (lengths == expected_lengths) {
        ++pieces_matched;
      } else {
        BOOST_ERROR("pre-tokenization differs for " << json::serialize(item.at("text")));
      }
    }
    if (const auto* nfc = item.if_contains("nfc")) {
      ++nfc_total;
      const std::string normalized = cua_s1::nfc_normalize(text);
      if (normalized == std::string(nfc->as_string())) {
        ++nfc_matched;
      } else {
        BOOST_ERROR("NFC differs for " << json::serialize(item.at("text")));
      }
    }
  }
  BOOST_TEST_MESSAGE("corpus: " << matched << "/" << total << " strings match, NFC " << nfc_matched
                                << "/" << nfc_total << ", pre-tokenization " << pieces_matched
                                << "/" << pieces_total);
  BOOST_TEST(total >= 2000u);
  BOOST_TEST(matched == total);
  BOOST_TEST(nfc_matched == nfc_total);
  BOOST_TEST(pieces_total >= 2000u);
  BOOST_TEST(pieces_matched == pieces_total);
}

BOOST_AUTO_TEST_CASE(encoding_is_repeatable_with_a_warm_cache) {
  const std::string text = "Hello world, hello WORLD. Don't stop; it'll be fine 12345 日本語";
  const auto first = qwen35().encode(text);
  for (int i = 0; i < 3; ++i) BOOST_TEST(qwen35().encode(text) == first);
}

BOOST_AUTO_TEST_CASE(concurrent_threads_and_two_tokenizers_agree) {
  const std::string text =
      "Goal: open Settings.\n\nOptions:\nA. Decision \"Wi-Fi\" -> select\n<|im_end|> café 日本";
  const auto expected = qwen35().encode(text);
  auto tiny = bpe_tokenizer::load_json(tiny_json(k_regex_json), "tiny");
  BOOST_TEST_REQUIRE(tiny.ok());
  const auto tiny_expected = tiny->encode("abc abc");
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool same = true;
      for (int i = 0; i < 200; ++i) {
        same = same && qwen35().encode(text) == expected;
        same = same && tiny->encode("abc abc") == tiny_expected;  // alternating owners of the cache
      }
      ok[t] = same;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) BOOST_TEST(ok[t] == 1);
}

BOOST_AUTO_TEST_CASE(tiny_tokenizer_merges_by_rank) {
  auto tok = bpe_tokenizer::load_json(tiny_json(k_regex_json), "tiny");
  BOOST_TEST_REQUIRE(tok.ok(), (tok.ok() ? "" : tok.error().detail));
  BOOST_TEST((tok->encode("abc") == std::vector<int32_t>{257}));
  BOOST_TEST((tok->encode("abx<s>ab") == std::vector<int32_t>{256, 'x', 300, 256}));
}

BOOST_AUTO_TEST_CASE(ignore_merges_maps_whole_vocab_words_directly) {
  std::string text = tiny_json(k_regex_json);
  auto with_merges = bpe_tokenizer::load_json(text, "tiny");
  BOOST_TEST_REQUIRE(with_merges.ok());
  BOOST_TEST((with_merges->encode("xyz") == std::vector<int32_t>{'x', 'y', 'z'}));
  text.replace(text.find("\"ignore_merges\":false"), 21, "\"ignore_merges\":true");
  auto ignoring = bpe_tokenizer::load_json(text, "tiny");
  BOOST_TEST_REQUIRE(ignoring.ok());
  BOOST_TEST((ignoring->encode("xyz abc") == std::vector<int32_t>{258, ' ', 257}));
}

BOOST_AUTO_TEST_CASE(load_errors_are_clear) {
  auto missing = bpe_tokenizer::load_file("/nonexistent/tokenizer.json");
  BOOST_TEST_REQUIRE(!missing.ok());
  BOOST_TEST(missing.error().status == 500);
  BOOST_TEST(missing.error().detail.find("/nonexistent/tokenizer.json") != std::string::npos);
  BOOST_TEST(missing.error().detail.find("cannot open") != std::string::npos);

  auto bad_json = bpe_tokenizer::load_json("{\"model\": [1, 2", "broken.json");
  BOOST_TEST_REQUIRE(!bad_json.ok());
  BOOST_TEST(bad_json.error().status == 500);
  BOOST_TEST(bad_json.error().detail.find("broken.json") != std::string::npos);
  BOOST_TEST(bad_json.error().detail.find("not valid JSON") != std::string::npos);

  auto regex = bpe_tokenizer::load_json(tiny_json("\"\\\\p{L}+|\\\\s+\""), "other.json");
  BOOST_TEST_REQUIRE(!regex.ok());
  BOOST_TEST(regex.error().detail.find("other.json") != std::string::npos);
  BOOST_TEST(regex.error().detail.find("unsupported Split regex") != std::string::npos,
             regex.error().detail);

  auto normalizer = bpe_tokenizer::load_json(tiny_json(k_regex_json, "{\"type\":\"NFKC\"}"), "n");
  BOOST_TEST_REQUIRE(!normalizer.ok());
  BOOST_TEST(normalizer.error().detail.find("NFKC") != std::string::npos);

  // Edits of the tiny document: each must be refused with a message naming the problem.
  const std::string good = tiny_json(k_regex_json);
  const std::pair<std::pair<std::string, std::string>, std::string> edits[] = {
      {{"\"abc\":257", "\"abc\":\"x\""}, "vocab entry \"abc\" has no valid id"},
      {{"\"ab c\"", "\"ab d\""}, "uses a token outside the vocab"},
      {{"\"ab c\"", "\"abc\""}, "merge 1"},
      {{"\"single_word\":false", "\"single_word\":true"}, "single_word"},
      {{"\"type\":\"ByteLevel\"", "\"type\":\"Metaspace\""}, "expected ByteLevel"},
      {{"\"type\":\"BPE\"", "\"type\":\"Unigram\""}, "Unigram"},
      {{"\"behavior\":\"Isolated\"", "\"behavior\":\"Removed\""}, "Removed"},
  };
  for (const auto& [edit, message] : edits) {
    std::string text = good;
    const size_t at = text.find(edit.first);
    BOOST_TEST_REQUIRE(at != std::string::npos, edit.first);
    text.replace(at, edit.first.size(), edit.second);
    auto refused = bpe_tokenizer::load_json(text, "edited.json");
    BOOST_TEST_REQUIRE(!refused.ok(), edit.second);
    BOOST_TEST(refused.error().status == 500);
    BOOST_TEST(refused.error().detail.find("edited.json") != std::string::npos);
    BOOST_TEST(refused.error().detail.find(message) != std::string::npos, refused.error().detail);
  }

  auto no_model = bpe_tokenizer::load_json("{\"added_tokens\": []}", "m.json");
  BOOST_TEST_REQUIRE(!no_model.ok());
  BOOST_TEST(no_model.error().detail.find("model") != std::string::npos);
}
