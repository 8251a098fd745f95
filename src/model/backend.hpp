// The model backend interface shared by the CPU reference backend and the CUDA backend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/outcome.hpp"
#include "prep/request_preparer.hpp"

namespace cua_s1 {

// Letter logits of one question: logits[i] is the fp32 logit of letter i (A, B, ...), read from
// the final-norm hidden state at the last prompt position and the tied embedding rows of
// prepared_question::letter_ids (spec/contract.md section 9).
struct question_logits {
  std::vector<float> logits;
};

// Runs the vision encoder once per request and one prefill per question. Implementations are
// not required to be thread-safe: the runtime gives each backend instance to one executor.
//
// Shaped for where performance goes next (DESIGN.md "Backends"): the request carries every
// question, so a backend may encode the image once, share the identical prefix (system prompt +
// image tokens) between questions, and pack several requests into one launch later.
// A run in flight: a device backend enqueues the work and the caller polls ready() (without
// blocking) until collect() may be called, once.
class pending_run {
 public:
  virtual ~pending_run() = default;
  virtual bool ready() = 0;
  virtual outcome<std::vector<question_logits>> collect() = 0;
};

class backend {
 public:
  virtual ~backend() = default;

  // Letter logits for every question of `request`, in question order; a failure is status 500.
  // Blocks until the answers are there.
  virtual outcome<std::vector<question_logits>> run(const prepared_request& request) = 0;

  // Starts a run and returns at once where the backend can (the CUDA backend enqueues and
  // records an event); `request` must outlive the pending run, and at most one run is in flight.
  // The default computes run() now and returns it already ready.
  virtual std::unique_ptr<pending_run> start(const prepared_request& request);

  // False after an error that leaves the backend unusable (a sticky CUDA error); the server then
  // turns unready and stops.
  virtual bool usable() const { return true; }

  // A short description for logs and /health, e.g. "cpu (8 threads)".
  virtual std::string description() const = 0;

  // Where requests for this backend should get their pixel values (prepared_image): the CUDA
  // backend makes them on the device from the resized 8-bit picture. Either form is accepted.
  virtual pixel_values_on pixel_values_made() const { return pixel_values_on::host; }

  // Seconds spent in the vision encoder and the language prefills by the last run() (for the
  // stage metrics); zero where a backend does not measure them.
  struct stage_seconds {
    double vision = 0;
    double language = 0;
  };
  virtual stage_seconds last_run_seconds() const { return {}; }
};

}  // namespace cua_s1
