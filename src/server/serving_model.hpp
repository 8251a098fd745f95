// Everything the server loads before it can answer: the request preparer and a backend.
#pragma once

#include <memory>
#include <string>

#include "common/outcome.hpp"
#include "model/backend.hpp"
#include "prep/request_preparer.hpp"
#include "server/server_options.hpp"

namespace cua_s1 {

struct serving_model {
  std::shared_ptr<const request_preparer> preparer;
  std::unique_ptr<backend> model;
  std::string identity;     // the "model" of answers and /health
  std::string description;  // what was loaded, for logs and /health ("bundled tiny model", ...)
  std::string model_dir;    // the base-model and adapter directories served, for the logs
  std::string adapter_dir;
};

// Verifies the lock (when there is one), reads the model and adapter directories and builds the
// backend, wrapped by sticky_error_after when options.fault_injection asks for it. Without --model
// it loads the bundled tiny model, searched as bundled_tiny_candidates() in serving_model.cpp
// says (installed beside the executable, then the source tree). Failures name the file or the
// places searched (status 500).
outcome<serving_model> load_serving_model(const server_options& options);

}  // namespace cua_s1
