// Backend benchmark: the model alone (no HTTP) on prepared requests (pixel values made where the
// server has them made), warm, with the vision and language split the backend measures. Prints a
// Markdown table and one JSON line per request. With --pass N each iteration runs N copies of the
// request as one pass (backend::start with a batch: the CUDA backend packs them), and the times
// are the pass's.
//   backend_bench --model DIR --adapter DIR --lock FILE [--backend cuda|cpu] [--threads N]
//                 [--iterations N] [--warmup N] [--unmerged-lora] [--graphs N]
//                 [--no-opening-cache] [--pass N] REQUEST.json [...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/cpu/cpu_backend.hpp"
#include "model/weight_loader.hpp"
#include "prep/request_preparer.hpp"
#ifdef CUA_S1_HAVE_CUDA
#include <cuda_profiler_api.h>

#include "gpu/cuda_backend.hpp"
#endif

namespace {

using clock_type = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

double percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  const size_t index = std::min(samples.size() - 1, size_t(p * double(samples.size() - 1) + 0.5));
  return samples[index];
}

int usage() {
  std::fprintf(stderr,
               "usage: backend_bench --model DIR --adapter DIR --lock FILE [--backend cuda|cpu]\n"
               "                     [--threads N] [--iterations N] [--warmup N] [--unmerged-lora]\n"
               "                     [--graphs N] [--no-opening-cache] [--pass N] REQUEST.json ...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, adapter_dir, lock_file, backend_name = "cuda";
  unsigned threads = 0;
  int iterations = 20, warmup = 3;
  bool merge_lora = true;
  size_t graphs = 16;
  bool keep_opening = true;
  int pass_size = 1;
  std::vector<std::string> requests;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--model") model_dir = value();
    else if (arg == "--adapter") adapter_dir = value();
    else if (arg == "--lock") lock_file = value();
    else if (arg == "--backend") backend_name = value();
    else if (arg == "--threads") threads = unsigned(std::stoul(value()));
    else if (arg == "--iterations") iterations = std::stoi(value());
    else if (arg == "--warmup") warmup = std::stoi(value());
    else if (arg == "--unmerged-lora") merge_lora = false;
    else if (arg == "--graphs") graphs = std::stoul(value());
    else if (arg == "--no-opening-cache") keep_opening = false;
    else if (arg == "--pass") pass_size = std::stoi(value());
    else if (arg.rfind("--", 0) == 0) return usage();
    else requests.push_back(arg);
  }
  if (model_dir.empty() || adapter_dir.empty() || lock_file.empty() || requests.empty() ||
      iterations < 1 || pass_size < 1)
    return usage();

  const auto load_start = clock_type::now();
  cua_s1::weight_sources sources{model_dir, adapter_dir, lock_file, {}};
  auto weights = cua_s1::load_model_weights(sources);
  if (!weights) return std::fprintf(stderr, "%s\n", weights.error().detail.c_str()), 1;
  auto preparer = cua_s1::request_preparer::load(model_dir);
  if (!preparer) return std::fprintf(stderr, "%s\n", preparer.error().detail.c_str()), 1;
  std::unique_ptr<cua_s1::backend> backend;
  if (backend_name == "cpu") {
    backend = cua_s1::make_cpu_backend(*weights, threads ? threads : 1);
  } else {
#ifdef CUA_S1_HAVE_CUDA
    cua_s1::cuda_backend_options options;
    options.merge_language_lora = merge_lora;
    options.graph_cache = graphs;
    options.reuse_prompt_opening = keep_opening;
    auto made = cua_s1::make_cuda_backend(*weights, std::move(options));
    if (!made) return std::fprintf(stderr, "%s\n", made.error().detail.c_str()), 1;
    backend = std::move(*made);
#else
    return std::fprintf(stderr, "this build has no CUDA backend\n"), 1;
#endif
  }
  const double load_s = std::chrono::duration<double>(clock_type::now() - load_start).count();
  std::printf("backend: %s, load + verify + upload %.2f s\n", backend->description().c_str(), load_s);
  std::printf("\n| request | patches | tokens/question | questions | pass | p50 ms | p95 ms | "
              "vision ms | language ms |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& path : requests) {
    auto request = preparer->parse(read_file(path));
    if (!request) return std::fprintf(stderr, "%s: %s\n", path.c_str(), request.error().detail.c_str()), 1;
    // Pixel values made where the server has them made (the CUDA backend: on the GPU).
    auto prepared = preparer->prepare(std::move(*request), backend->pixel_values_made());
    if (!prepared) return std::fprintf(stderr, "%s: %s\n", path.c_str(), prepared.error().detail.c_str()), 1;
    std::vector<double> total, vision, language;
    const std::vector<const cua_s1::prepared_request*> pass(size_t(pass_size), &*prepared);
    for (int i = 0; i < warmup + iterations; ++i) {
#ifdef CUA_S1_HAVE_CUDA
      // A profiler run with --profile-from-start off sees the timed iterations alone (not the
      // backend's startup pass or the warmup).
      if (i == warmup && backend_name == "cuda") cudaProfilerStart();
#endif
      const auto start = clock_type::now();
      cua_s1::pass_result result = pass_size == 1
                                       ? cua_s1::pass_result{{backend->run(*prepared)}, {}}
                                       : backend->start(pass)->collect();
      const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
      for (const cua_s1::request_logits& answer : result.requests)
        if (!answer)
          return std::fprintf(stderr, "%s: %s\n", path.c_str(), answer.error().detail.c_str()), 1;
      if (i < warmup) continue;
      total.push_back(ms);
      vision.push_back(backend->last_run_seconds().vision * 1e3);
      language.push_back(backend->last_run_seconds().language * 1e3);
    }
#ifdef CUA_S1_HAVE_CUDA
    if (backend_name == "cuda") cudaProfilerStop();
#endif
    const size_t patches = size_t(prepared->pixels.grid.h) * prepared->pixels.grid.w;
    const size_t tokens = prepared->questions.front().input_ids.size();
    const std::string name = path.substr(path.find_last_of('/') + 1);
    std::printf("| %s | %zu | %zu | %zu | %d | %.2f | %.2f | %.2f | %.2f |\n", name.c_str(),
                patches, tokens, prepared->questions.size(), pass_size, percentile(total, 0.5),
                percentile(total, 0.95), percentile(vision, 0.5), percentile(language, 0.5));
    std::fprintf(stderr,
                 "{\"request\":\"%s\",\"patches\":%zu,\"tokens\":%zu,\"questions\":%zu,\"pass\":%d,"
                 "\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"vision_ms\":%.3f,\"language_ms\":%.3f}\n",
                 name.c_str(), patches, tokens, prepared->questions.size(), pass_size,
                 percentile(total, 0.5), percentile(total, 0.95), percentile(vision, 0.5),
                 percentile(language, 0.5));
  }
  return 0;
}
