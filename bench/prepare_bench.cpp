// Processor benchmark: decode + preprocess + tokenize of whole requests on one thread, with the
// stage split, as median milliseconds. Prints a Markdown table and a JSON line.
//   prepare_bench MODEL_DIR REQUEST.json [REQUEST.json ...] [--iterations N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "codec/image_decoder.hpp"
#include "prep/chat_prompt.hpp"
#include "prep/request_preparer.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
double median_ms(int iterations, F&& body) {
  std::vector<double> samples;
  samples.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    auto start = clock_type::now();
    body();
    samples.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: prepare_bench MODEL_DIR REQUEST.json [...] [--iterations N]\n");
    return 2;
  }
  int iterations = 50;
  std::vector<std::string> requests;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--iterations" && i + 1 < argc) iterations = std::stoi(argv[++i]);
    else requests.push_back(arg);
  }
  auto preparer = cua_s1::request_preparer::load(argv[1]);
  if (!preparer) {
    std::fprintf(stderr, "%s\n", preparer.error().detail.c_str());
    return 1;
  }
  std::printf("| request | total ms | json+validate | image decode | resize+normalize | tokenize+positions |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const auto& path : requests) {
    const std::string body = read_file(path);
    auto check = preparer->prepare(body);
    if (!check) {
      std::fprintf(stderr, "%s: %d %s\n", path.c_str(), check.error().status,
                   check.error().detail.c_str());
      return 1;
    }
    auto parsed = cua_s1::parse_strict_json(body);
    auto request = cua_s1::validate_request(*parsed);
    auto image = cua_s1::decode_image_data_url(request->image_data_url);
    const auto& config = preparer->files().image;

    double total = median_ms(iterations, [&] { (void)preparer->prepare(body); });
    double json = median_ms(iterations, [&] {
      auto v = cua_s1::parse_strict_json(body);
      (void)cua_s1::validate_request(std::move(*v));
    });
    double decode = median_ms(iterations, [&] {
      (void)cua_s1::decode_image_data_url(request->image_data_url);
    });
    double prep = median_ms(iterations, [&] { (void)cua_s1::preprocess_image(*image, config); });
    double tokenize = median_ms(iterations, [&] {
      for (const auto& q : request->questions)
        (void)preparer->tokenizer().encode(cua_s1::prompt_tail(q));
    });
    std::printf("| %s (%ux%u) | %.2f | %.2f | %.2f | %.2f | %.2f |\n", path.c_str(), image->width,
                image->height, total, json, decode, prep, tokenize);
  }
  return 0;
}
