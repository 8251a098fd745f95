// Benchmark: tokenizer.json load time and single-thread encode throughput on English prose.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "prep/bpe_tokenizer.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// About `bytes` of plausible English prose from a fixed word list and seed.
std::string english_prose(size_t bytes) {
  static const char* words[] = {"the",
                                "of",
                                "and",
                                "to",
                                "in",
                                "is",
                                "you",
                                "that",
                                "it",
                                "he",
                                "was",
                                "for",
                                "on",
                                "are",
                                "as",
                                "with",
                                "his",
                                "they",
                                "at",
                                "be",
                                "this",
                                "have",
                                "from",
                                "or",
                                "one",
                                "had",
                                "by",
                                "word",
                                "but",
                                "not",
                                "what",
                                "all",
                                "were",
                                "we",
                                "when",
                                "your",
                                "can",
                                "said",
                                "there",
                                "use",
                                "each",
                                "which",
                                "she",
                                "do",
                                "how",
                                "their",
                                "if",
                                "will",
                                "up",
                                "other",
                                "about",
                                "out",
                                "many",
                                "then",
                                "them",
                                "these",
                                "so",
                                "some",
                                "her",
                                "would",
                                "make",
                                "like",
                                "into",
                                "time",
                                "has",
                                "look",
                                "two",
                                "more",
                                "write",
                                "go",
                                "see",
                                "number",
                                "way",
                                "could",
                                "people",
                                "than",
                                "first",
                                "water",
                                "been",
                                "called",
                                "who",
                                "oil",
                                "its",
                                "now",
                                "find",
                                "long",
                                "down",
                                "day",
                                "did",
                                "get",
                                "come",
                                "made",
                                "may",
                                "part",
                                "government",
                                "screenshot",
                                "candidate",
                                "decision",
                                "interface",
                                "application",
                                "window",
                                "selected",
                                "information",
                                "development",
                                "understanding",
                                "particularly",
                                "environment",
                                "1984",
                                "Monday",
                                "London",
                                "Microsoft",
                                "don't",
                                "it's",
                                "they're",
                                "we'll",
                                "Mr.",
                                "e.g.",
                                "approximately",
                                "responsibility",
                                "unbelievable",
                                "straightforward",
                                "notwithstanding"};
  std::mt19937 rng(1234);
  std::string text;
  text.reserve(bytes + 64);
  bool sentence_start = true;
  while (text.size() < bytes) {
    std::string w = words[rng() % (sizeof(words) / sizeof(words[0]))];
    if (sentence_start) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    text += w;
    sentence_start = false;
    const unsigned r = rng() % 100;
    if (r < 6) {
      text += ". ";
      sentence_start = true;
    } else if (r < 10) {
      text += ", ";
    } else if (r < 11) {
      text += ".\n\n";
      sentence_start = true;
    } else {
      text += ' ';
    }
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef CUA_S1_BINARY_DIR
  const std::string fallback = std::string(CUA_S1_BINARY_DIR) + "/fixtures/qwen35/tokenizer.json";
#else
  const std::string fallback = "build/fixtures/qwen35/tokenizer.json";
#endif
  const std::string path = argc > 1 ? argv[1] : fallback;
  auto start = clock_type::now();
  auto loaded = cua_s1::bpe_tokenizer::load_file(path);
  const double load_s = seconds_since(start);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().detail.c_str());
    return 1;
  }
  const auto& tok = loaded.value();
  std::printf("load %s: %.3f s (%zu vocab, %zu added tokens)\n", path.c_str(), load_s,
              tok.vocab_size(), tok.added_tokens().size());

  const std::string text = english_prose(400 * 1024);
  // Cold: first pass with an empty word cache; then warm passes.
  start = clock_type::now();
  size_t tokens = tok.encode(text).size();
  const double cold_s = seconds_since(start);
  std::printf("cold encode: %.1f MB/s (%zu bytes -> %zu tokens)\n", text.size() / cold_s / 1e6,
              text.size(), tokens);
  const int rounds = 20;
  start = clock_type::now();
  for (int i = 0; i < rounds; ++i) tokens = tok.encode(text).size();
  const double warm_s = seconds_since(start) / rounds;
  std::printf("warm encode: %.1f MB/s, one thread\n", text.size() / warm_s / 1e6);
  // Prompt-sized calls (about 1.5 KB each), as the server makes them.
  const std::string prompt = text.substr(0, 1500);
  start = clock_type::now();
  const int calls = 20000;
  for (int i = 0; i < calls; ++i) tokens += tok.encode(prompt).size();
  const double call_s = seconds_since(start) / calls;
  std::printf("1.5 KB prompt: %.1f us per encode (%.1f MB/s)\n", call_s * 1e6,
              prompt.size() / call_s / 1e6);
  return tokens == 0;
}
