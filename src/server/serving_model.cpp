// Resolves the model, adapter and lock paths of the options (the bundled tiny model by
// default), loads and verifies the weights, and builds the backend (with the fault injection of
// the options, when there is one) and request preparer.
#include "server/serving_model.hpp"

#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "common/json_log.hpp"
#include "model/cpu/cpu_backend.hpp"
#ifdef CUA_S1_HAVE_CUDA
#include "gpu/cuda_backend.hpp"
#endif
#include "model/weight_loader.hpp"
#include "server/fault_injection.hpp"

namespace cua_s1 {
namespace {

namespace fs = std::filesystem;

struct model_paths {
  fs::path base, adapter, lock;
  bool bundled = false;
};

// The places the bundled tiny model is looked for, in this order (README, "Embedding /
// installing"): beside an installed executable (<prefix>/bin/../share/cua-s1/tiny, the path
// relative to the executable's directory fixed at configure time), then the source tree this
// binary was built from (tests/fixtures/tiny: the in-tree build, its tests and benches).
std::vector<fs::path> bundled_tiny_candidates() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / CUA_S1_TINY_MODEL_FROM_BINDIR).lexically_normal());
  candidates.push_back(fs::path(CUA_S1_TINY_MODEL_DIR));
  return candidates;
}

// The first candidate holding a weights.lock.json; none: a failure naming every place tried.
outcome<fs::path> bundled_tiny_dir() {
  std::string tried;
  for (const fs::path& candidate : bundled_tiny_candidates()) {
    std::error_code ec;
    if (fs::is_regular_file(candidate / "weights.lock.json", ec)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  return failure{500, "the bundled tiny model was not found (looked in " + tried +
                          "); pass --model DIR"};
}

outcome<model_paths> resolve_paths(const server_options& options) {
  model_paths paths;
  if (options.model_dir.empty()) {
    auto found = bundled_tiny_dir();
    if (!found) return found.error();
    const fs::path& tiny = *found;
    paths.base = tiny / "base";
    paths.adapter = options.adapter_dir.empty() ? tiny / "multimodal" : fs::path(options.adapter_dir);
    paths.lock = options.lock_file.empty() ? tiny / "weights.lock.json" : fs::path(options.lock_file);
    paths.bundled = true;
    return paths;
  }
  paths.base = options.model_dir;
  const fs::path parent = fs::absolute(paths.base).lexically_normal().parent_path();
  paths.adapter = options.adapter_dir.empty() ? parent / "cua-s1-4b-0.2" / "multimodal"
                                              : fs::path(options.adapter_dir);
  paths.lock = options.lock_file.empty() ? parent / "weights.lock.json" : fs::path(options.lock_file);
  return paths;
}

// The backend the options ask for; "auto" takes the GPU when this build and machine have one.
outcome<std::unique_ptr<backend>> make_backend(const server_options& options,
                                               std::shared_ptr<const model_weights> weights) {
  const unsigned threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
#ifdef CUA_S1_HAVE_CUDA
  const int gpus = cuda_device_count();
  if (options.backend == "cuda" || (options.backend == "auto" && gpus > 0))
  {
    cuda_backend_options cuda;
    cuda.device = options.device;
    cuda.graph_cache = options.cuda_graphs;
    cuda.merge_language_lora = options.merge_language_lora;
    cuda.reuse_prompt_opening = options.keep_prompt_opening;
    cuda.max_pass_rows = options.max_batch_tokens;
    cuda.max_pass_patches = options.max_batch_patches;
    return make_cuda_backend(std::move(weights), std::move(cuda));
  }
  if (options.backend == "auto")
    log_event(log_level::info, "backend_choice",
              {{"backend", "cpu"}, {"reason", "no CUDA device found"}});
#else
  if (options.backend == "cuda")
    return failure{500, "--backend cuda: this build has no CUDA backend (configure with nvcc present)"};
  if (options.backend == "auto")
    log_event(log_level::info, "backend_choice",
              {{"backend", "cpu"}, {"reason", "this build has no CUDA backend"}});
#endif
  return std::unique_ptr<backend>(make_cpu_backend(std::move(weights), threads));
}

}  // namespace

outcome<serving_model> load_serving_model(const server_options& options) {
  std::optional<size_t> fault_runs;
  if (!options.fault_injection.empty()) {
    auto runs = parse_fault_injection(options.fault_injection);
    if (!runs) return runs.error();
    fault_runs = *runs;
  }
  auto resolved = resolve_paths(options);
  if (!resolved) return resolved.error();
  const model_paths& paths = *resolved;
  for (const auto& [what, path] : {std::pair{"model directory", paths.base},
                                   std::pair{"adapter directory", paths.adapter}}) {
    std::error_code ec;
    if (!fs::is_directory(path, ec))
      return failure{500, std::string(what) + " " + path.string() + " does not exist"};
  }
  std::error_code ec;
  if (!fs::is_regular_file(paths.lock, ec))
    return failure{500, "lock file " + paths.lock.string() + " does not exist (pass --lock FILE)"};

  weight_sources sources;
  sources.base_dir = paths.base;
  sources.adapter_dir = paths.adapter;
  sources.lock_file = paths.lock;
  sources.progress = [](uint64_t done, uint64_t total) {
    log_event(log_level::info, "verifying_weights",
              {{"bytes_done", static_cast<int64_t>(done)}, {"bytes_total", static_cast<int64_t>(total)}});
  };
  auto weights = load_model_weights(sources);
  if (!weights) return weights.error();

  auto preparer = request_preparer::load(paths.base, image_limits{.max_jpeg_scans = options.max_jpeg_scans});
  if (!preparer) return preparer.error();

  serving_model model;
  model.preparer = std::make_shared<const request_preparer>(std::move(*preparer));
  model.identity = (*weights)->identity;
  model.model_dir = paths.base.string();
  model.adapter_dir = paths.adapter.string();
  model.description = paths.bundled ? "bundled tiny model (" + (*weights)->description + ")"
                                    : (*weights)->description;
  auto backend = make_backend(options, std::move(*weights));
  if (!backend) return backend.error();
  model.model = std::move(*backend);
  if (fault_runs) {
    model.model = sticky_error_after(std::move(model.model), *fault_runs);
    log_event(log_level::warning, "fault_injection",
              {{"spec", options.fault_injection}, {"purpose", "tests of the fatal-error path"}});
  }
  return model;
}

}  // namespace cua_s1
