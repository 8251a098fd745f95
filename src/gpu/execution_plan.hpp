// How the CUDA backend runs a request, chosen once when the backend is made: the serving plan
// (every saving that keeps the answers within the contract's tolerance) or the probing plan of
// the parity tests' stage reports (model/stage_probe.hpp), which compare each stage of each
// question's whole prompt with the reference's and so need every row of every stage.
#pragma once

namespace cua_s1::gpu {

struct execution_plan {
  // The layer stack and the vision encoder replay captured CUDA graphs (else they run eagerly).
  bool graphs = true;
  // The prompt opening's K/V rows and GDN state stay on the GPU between requests.
  bool keep_opening = true;
  // The questions' shared prefix runs once and each question runs only its suffix after it.
  bool share_prefix = true;
  // Questions go through the layers together, as runs of one pass (else one pass each).
  bool batch_questions = true;
  // The last layer after its sequence mixing, and the final norm, run over every row (else
  // over each question's last row alone, the only one the letter readout reads).
  bool last_layer_all_rows = false;

  // The server's plan; `graphs` and `keep_opening` are its options.
  static execution_plan serving(bool graphs, bool keep_opening) {
    return {.graphs = graphs, .keep_opening = keep_opening};
  }

  // The stage probe's plan: each question's whole prompt in a pass of its own, eagerly (stage
  // reports synchronise the stream), every row through the last layer and the final norm.
  static execution_plan probing() {
    return {.graphs = false,
            .keep_opening = false,
            .share_prefix = false,
            .batch_questions = false,
            .last_layer_all_rows = true};
  }
};

}  // namespace cua_s1::gpu
