// The model backend interface shared by the CPU reference backend and the CUDA backend.
#pragma once

#include <memory>
#include <span>
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

// One request's outcome: the letter logits of each of its questions, in question order, or why
// there are none (status 500).
using request_logits = outcome<std::vector<question_logits>>;

// Seconds spent in the vision encoder and the language prefills (for the stage metrics); zero
// where a backend does not measure them.
struct stage_seconds {
  double vision = 0;
  double language = 0;
};

// What one pass gives back: each request's outcome, in the order start() was given them (one
// request's failure, e.g. non-finite logits, leaves the others' answers alone; an error that
// breaks the device fails them all), and the pass's seconds, shared by all its requests.
struct pass_result {
  std::vector<request_logits> requests;
  stage_seconds seconds;
};

// A pass in flight: a device backend enqueues the work and the caller polls ready() (without
// blocking) until collect() may be called, once. collect() before ready() waits for the pass.
class pending_run {
 public:
  virtual ~pending_run() = default;
  virtual bool ready() = 0;
  virtual pass_result collect() = 0;
};

// The requests of one pass, in the order their outcomes come back; each outlives the pass.
using request_batch = std::span<const prepared_request* const>;

// Runs the vision encoder once per request and one prefill per question. Implementations are
// not required to be thread-safe: the runtime gives each backend instance to one executor.
//
// Shaped for where performance goes next (DESIGN.md "Backends"): a pass carries several
// requests and each request every question, so a backend may encode the images together, run
// each request's identical prefix (system prompt + image tokens) once, and pack the questions
// of every request into one launch.
class backend {
 public:
  virtual ~backend() = default;

  // Letter logits for every question of `request`, in question order; a failure is status 500.
  // Blocks until the answers are there; last_run_seconds() then has its seconds.
  virtual request_logits run(const prepared_request& request) = 0;

  // Starts one pass over `requests` (at least one) and returns at once where the backend can
  // (the CUDA backend enqueues and records an event); at most one pass is in flight. The
  // default runs the requests one after another through run(), now, and returns the pass
  // already ready.
  virtual std::unique_ptr<pending_run> start(request_batch requests);

  // False after an error that leaves the backend unusable (a sticky CUDA error); the server then
  // turns unready and stops.
  virtual bool usable() const { return true; }

  // A short description for logs and /health, e.g. "cpu (8 threads)".
  virtual std::string description() const = 0;

  // Where requests for this backend should get their pixel values (prepared_image): the CUDA
  // backend makes them on the device from the resized 8-bit picture. Either form is accepted.
  virtual pixel_values_on pixel_values_made() const { return pixel_values_on::host; }

  // Seconds of the last run() (benchmarks and tests; a pass reports its own in pass_result).
  virtual stage_seconds last_run_seconds() const { return {}; }
};

}  // namespace cua_s1
