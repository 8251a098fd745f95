// The tiny-model parity checks shared by the CPU and CUDA backend tests: runs a backend over the
// reference corpus of tests/fixtures/tiny/reference (Transformers 5.17 + PEFT 0.21 controls,
// tools/make_tiny_reference.py) and checks inputs, letter logits against the fp32 control,
// per-stage errors, the contract 12.1 tolerance rule and bit-identical repeated runs.
#pragma once

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/response_assembler.hpp"
#include "model/backend.hpp"
#include "model/stage_probe.hpp"
#include "model/weight_loader.hpp"
#include "prep/request_preparer.hpp"
#include "test_support.hpp"

namespace cua_s1::test::parity {

namespace json = boost::json;

// Builds the backend under test, with an optional stage probe.
using backend_factory = std::function<std::unique_ptr<backend>(
    std::shared_ptr<const model_weights>, stage_probe)>;

inline std::vector<double> numbers(const json::value& array) {
  std::vector<double> out;
  for (const auto& v : array.as_array()) out.push_back(v.to_number<double>());
  return out;
}

inline std::vector<int64_t> integers(const json::value& array) {
  std::vector<int64_t> out;
  for (const auto& v : array.as_array()) out.push_back(v.to_number<int64_t>());
  return out;
}

// One captured activation [rows, cols].
struct stage_tensor {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;
};
using stage_map = std::map<std::string, stage_tensor>;

// A case of the reference, prepared and run once by the backend under test.
struct case_result {
  const json::object* reference = nullptr;
  prepared_request prepared;
  std::vector<std::vector<float>> logits;  // per question
  stage_map vision_stages;                 // vision.*
  std::vector<stage_map> question_stages;  // language.* per question
};

struct tiny_run {
  std::shared_ptr<const model_weights> weights;
  std::shared_ptr<const request_preparer> preparer;
  json::value reference;
  std::vector<case_result> cases;
};

// The model under test: the bundled tiny model, or the directory in $CUA_S1_PARITY_MODEL (with
// base/, multimodal/, weights.lock.json, e.g. the full-size random model that
// tools/make_full_random_model.py writes on the GPU host) whose Transformers controls are in
// $CUA_S1_PARITY_REFERENCE (tools/make_tiny_reference.py --base/--adapter --out).
inline std::string parity_model_dir() {
  const char* dir = std::getenv("CUA_S1_PARITY_MODEL");
  return dir && *dir ? std::string(dir) : fixture_path("tiny");
}

inline json::value parity_reference() {
  const char* path = std::getenv("CUA_S1_PARITY_REFERENCE");
  if (path && *path) return json::parse(read_file(path));
  return read_json_fixture("tiny/reference/reference.json");
}

inline std::shared_ptr<const model_weights> load_tiny_weights() {
  const std::string tiny = parity_model_dir();
  weight_sources sources;
  sources.base_dir = tiny + "/base";
  sources.adapter_dir = tiny + "/multimodal";
  sources.lock_file = tiny + "/weights.lock.json";
  auto weights = load_model_weights(sources);
  if (!weights) throw std::runtime_error("tiny model: " + weights.error().detail);
  return *weights;
}

// Loads the tiny model and runs every reference case question by question with a probe.
inline std::unique_ptr<tiny_run> run_tiny_corpus(const backend_factory& make) {
  auto m = std::make_unique<tiny_run>();
  const std::string tiny = parity_model_dir();
  m->weights = load_tiny_weights();
  auto preparer = request_preparer::load(tiny + "/base");
  if (!preparer) throw std::runtime_error("tiny preparer: " + preparer.error().detail);
  m->preparer = std::make_shared<const request_preparer>(std::move(*preparer));
  m->reference = parity_reference();

  // One backend whose probe records every stage of the run in progress.
  stage_map* target = nullptr;
  stage_map vision_capture;
  stage_probe probe = [&](const std::string& stage, const float* data, int64_t rows,
                          int64_t cols) {
    stage_map& into = stage.rfind("vision.", 0) == 0 ? vision_capture : *target;
    into[stage] = {rows, cols, std::vector<float>(data, data + rows * cols)};
  };
  auto backend = make(m->weights, probe);
  for (const auto& c : m->reference.at("cases").as_array()) {
    case_result result;
    result.reference = &c.as_object();
    const std::string body = read_file(
        fixture_path("prepare/requests/" + std::string(c.at("request").as_string())));
    auto prepared = m->preparer->prepare(body);
    if (!prepared) throw std::runtime_error("prepare failed: " + prepared.error().detail);
    result.prepared = std::move(*prepared);
    // Run question by question so the probe can tell the questions' stages apart.
    vision_capture.clear();
    for (size_t q = 0; q < result.prepared.questions.size(); ++q) {
      prepared_request single = result.prepared;
      single.questions = {result.prepared.questions[q]};
      result.question_stages.emplace_back();
      target = &result.question_stages.back();
      auto logits = backend->run(single);
      if (!logits) throw std::runtime_error("run failed: " + logits.error().detail);
      result.logits.push_back(logits->at(0).logits);
    }
    result.vision_stages = vision_capture;
    m->cases.push_back(std::move(result));
  }
  return m;
}

// ||ours[rows] - reference|| / ||reference|| over the reference's sampled rows.
inline double relative_error(const stage_tensor& ours, const json::object& reference) {
  const auto rows = integers(reference.at("rows"));
  const auto& values = reference.at("values").as_array();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto row = numbers(values[i]);
    BOOST_REQUIRE_LT(rows[i], ours.rows);
    BOOST_REQUIRE_EQUAL(int64_t(row.size()), ours.cols);
    for (size_t j = 0; j < row.size(); ++j) {
      const double d = ours.values[size_t(rows[i] * ours.cols) + j] - row[j];
      diff += d * d;
      norm += row[j] * row[j];
    }
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Relative error of the bf16 control's sampled rows against the fp32 control's.
inline double control_error(const json::object& bf16, const json::object& fp32) {
  const auto& a = bf16.at("values").as_array();
  const auto& b = fp32.at("values").as_array();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = numbers(a[i]), y = numbers(b[i]);
    for (size_t j = 0; j < y.size(); ++j) {
      diff += (x[j] - y[j]) * (x[j] - y[j]);
      norm += y[j] * y[j];
    }
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// The largest stage error allowed given the bf16 control's error at that stage.
using stage_bound = std::function<double(double bf16_error)>;

inline void check_stages(const std::string& label, const stage_map& ours,
                         const json::object& stages, const stage_bound& bound, double& worst_ratio) {
  const auto& fp32 = stages.at("fp32").as_object();
  const auto& bf16 = stages.at("bf16").as_object();
  for (const auto& [name, reference] : fp32) {
    const std::string stage(name);
    BOOST_TEST_CONTEXT(label << " " << stage) {
      BOOST_REQUIRE_MESSAGE(ours.count(stage), "the backend did not report " << stage);
      const double ours_error = relative_error(ours.at(stage), reference.as_object());
      const double bf16_error = control_error(bf16.at(name).as_object(), reference.as_object());
      BOOST_TEST_MESSAGE(label << " " << stage << ": relative error vs fp32 " << ours_error
                               << " (bf16 control: " << bf16_error << ")");
      worst_ratio = std::max(worst_ratio, ours_error / std::max(bf16_error, 1e-30));
      BOOST_TEST(ours_error <= bound(bf16_error));
    }
  }
}

inline void check_inputs(const tiny_run& m) {
  for (const case_result& c : m.cases) {
    const std::string name(c.reference->at("name").as_string());
    BOOST_TEST_CONTEXT(name) {
      const auto grid = integers(c.reference->at("grid_thw"));
      BOOST_TEST(grid == (std::vector<int64_t>{c.prepared.pixels.grid.t, c.prepared.pixels.grid.h,
                                               c.prepared.pixels.grid.w}),
                 boost::test_tools::per_element());
      const auto& questions = c.reference->at("questions").as_array();
      BOOST_REQUIRE_EQUAL(questions.size(), c.prepared.questions.size());
      for (size_t q = 0; q < questions.size(); ++q) {
        const prepared_question& ours = c.prepared.questions[q];
        const auto ids = integers(questions[q].at("input_ids"));
        BOOST_TEST(ids == std::vector<int64_t>(ours.input_ids.begin(), ours.input_ids.end()),
                   boost::test_tools::per_element());
        const auto& axes = questions[q].at("position_ids").as_array();
        for (size_t axis = 0; axis < 3; ++axis) {
          const auto& mine = ours.positions.axes[axis];
          BOOST_TEST(integers(axes[axis]) == std::vector<int64_t>(mine.begin(), mine.end()),
                     boost::test_tools::per_element());
        }
        const auto letters = integers(questions[q].at("letter_ids"));
        BOOST_TEST(letters == std::vector<int64_t>(ours.letter_ids.begin(), ours.letter_ids.end()),
                   boost::test_tools::per_element());
      }
    }
  }
}

// Letter logits within `logit_tolerance` and probabilities within `probability_tolerance` of
// the fp32 control; prints the worst errors next to the bf16 control's.
inline void check_fp32_logits(const tiny_run& m, double logit_tolerance,
                              double probability_tolerance) {
  double worst_logit = 0, worst_probability = 0, bf16_logit = 0, bf16_probability = 0;
  for (const case_result& c : m.cases) {
    const std::string name(c.reference->at("name").as_string());
    const auto& questions = c.reference->at("questions").as_array();
    for (size_t q = 0; q < questions.size(); ++q) {
      BOOST_TEST_CONTEXT(name << " question " << q) {
        const auto& fp32 = questions[q].at("fp32").as_object();
        const auto logits = numbers(fp32.at("logits"));
        const auto probabilities = numbers(fp32.at("probabilities"));
        const auto control_logits = numbers(questions[q].at("bf16").at("logits"));
        const auto control_probabilities = numbers(questions[q].at("bf16").at("probabilities"));
        const std::vector<float>& ours = c.logits[q];
        const std::vector<float> our_probabilities = letter_softmax(ours);
        BOOST_REQUIRE_EQUAL(ours.size(), logits.size());
        for (size_t i = 0; i < ours.size(); ++i) {
          worst_logit = std::max(worst_logit, std::abs(ours[i] - logits[i]));
          worst_probability =
              std::max(worst_probability, std::abs(our_probabilities[i] - probabilities[i]));
          bf16_logit = std::max(bf16_logit, std::abs(control_logits[i] - logits[i]));
          bf16_probability =
              std::max(bf16_probability, std::abs(control_probabilities[i] - probabilities[i]));
          BOOST_TEST(std::abs(ours[i] - logits[i]) <= logit_tolerance);
          BOOST_TEST(std::abs(our_probabilities[i] - probabilities[i]) <= probability_tolerance);
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("max |logit - fp32| = " << worst_logit << " (bf16 control " << bf16_logit
                                             << "), max |p - p_fp32| = " << worst_probability
                                             << " (bf16 control " << bf16_probability << ")");
}

// Per corpus, our max |logit - fp32| and max |p - p_fp32| are at most the bf16 control's (the
// goal for a bf16 GPU backend); prints both.
inline void check_errors_at_most_the_bf16_control(const tiny_run& m) {
  struct errors {
    double logit = 0, probability = 0, control_logit = 0, control_probability = 0;
  };
  std::map<std::string, errors> by_corpus;
  for (const case_result& c : m.cases) {
    errors& e = by_corpus[std::string(c.reference->at("corpus").as_string())];
    const auto& questions = c.reference->at("questions").as_array();
    for (size_t q = 0; q < questions.size(); ++q) {
      const auto logits = numbers(questions[q].at("fp32").at("logits"));
      const auto probabilities = numbers(questions[q].at("fp32").at("probabilities"));
      const auto control_logits = numbers(questions[q].at("bf16").at("logits"));
      const auto control_probabilities = numbers(questions[q].at("bf16").at("probabilities"));
      const std::vector<float> ours = letter_softmax(c.logits[q]);
      for (size_t i = 0; i < logits.size(); ++i) {
        e.logit = std::max(e.logit, std::abs(c.logits[q][i] - logits[i]));
        e.probability = std::max(e.probability, std::abs(ours[i] - probabilities[i]));
        e.control_logit = std::max(e.control_logit, std::abs(control_logits[i] - logits[i]));
        e.control_probability =
            std::max(e.control_probability, std::abs(control_probabilities[i] - probabilities[i]));
      }
    }
  }
  for (const auto& [corpus, e] : by_corpus) {
    BOOST_TEST_MESSAGE(corpus << ": max |logit - fp32| " << e.logit << " (bf16 control "
                              << e.control_logit << "), max |p - p_fp32| " << e.probability
                              << " (bf16 control " << e.control_probability << ")");
    BOOST_TEST(e.logit <= e.control_logit);
    BOOST_TEST(e.probability <= e.control_probability);
  }
}

inline void check_all_stages(const tiny_run& m, const stage_bound& bound) {
  double worst_ratio = 0;
  for (const case_result& c : m.cases) {
    const std::string name(c.reference->at("name").as_string());
    check_stages(name, c.vision_stages, c.reference->at("stages").as_object(), bound, worst_ratio);
    const auto& questions = c.reference->at("questions").as_array();
    for (size_t q = 0; q < questions.size(); ++q)
      check_stages(name + " q" + std::to_string(q), c.question_stages[q],
                   questions[q].at("stages").as_object(), bound, worst_ratio);
  }
  BOOST_TEST_MESSAGE("worst stage error / bf16 control error = " << worst_ratio);
}

// spec/contract.md 12.1, per corpus: max |p - p_fp32| <= 2 max |p_bf16 - p_fp32| + 0.01, and
// the fp32 top choice kept wherever its top-two margin is >= 0.05.
inline void check_tolerance_rule(const tiny_run& m) {
  std::map<std::string, std::pair<double, double>> errors;  // corpus -> (ours, bf16)
  for (const case_result& c : m.cases) {
    const std::string corpus(c.reference->at("corpus").as_string());
    auto& [ours_max, bf16_max] = errors[corpus];
    const auto& questions = c.reference->at("questions").as_array();
    for (size_t q = 0; q < questions.size(); ++q) {
      const auto fp32 = numbers(questions[q].at("fp32").at("probabilities"));
      const auto bf16 = numbers(questions[q].at("bf16").at("probabilities"));
      const std::vector<float> ours = letter_softmax(c.logits[q]);
      double sum = 0;
      for (size_t i = 0; i < fp32.size(); ++i) {
        ours_max = std::max(ours_max, std::abs(ours[i] - fp32[i]));
        bf16_max = std::max(bf16_max, std::abs(bf16[i] - fp32[i]));
        BOOST_TEST((std::isfinite(ours[i]) && ours[i] >= 0 && ours[i] <= 1));
        sum += ours[i];
      }
      BOOST_TEST(std::abs(sum - 1.0) <= 1e-5);
      size_t top = 0, ours_top = 0;
      for (size_t i = 1; i < fp32.size(); ++i) {
        if (fp32[i] > fp32[top]) top = i;
        if (ours[i] > ours[ours_top]) ours_top = i;
      }
      double second = 0;
      for (size_t i = 0; i < fp32.size(); ++i)
        if (i != top) second = std::max(second, fp32[i]);
      const double margin = fp32.size() == 1 ? 1.0 : fp32[top] - second;
      if (margin >= 0.05) BOOST_TEST(ours_top == top);
    }
  }
  BOOST_REQUIRE(errors.count("standard") && errors.count("boundary"));
  for (const auto& [corpus, pair] : errors) {
    const double allowed = 2 * pair.second + 0.01;
    BOOST_TEST_MESSAGE(corpus << ": max error " << pair.first << ", bf16 control " << pair.second
                              << ", allowed " << allowed);
    BOOST_TEST(pair.first <= allowed);
  }
}

// Whole-request re-runs on a fresh backend are bit-identical to each other. A backend that runs
// the questions' shared prefix once (`shares_prefix`) must meet spec/contract.md 12.1 on these
// answers too (its GEMMs see other heights, so bf16 roundings differ from the question-by-question
// runs of `m`); any other backend must give exactly the answers of `m`.
inline void check_repeated_runs(const tiny_run& m, const backend_factory& make,
                                bool shares_prefix = false) {
  std::map<std::string, double> control;  // corpus -> max |p_bf16 - p_fp32|
  for (const case_result& c : m.cases)
    for (const auto& question : c.reference->at("questions").as_array()) {
      const auto fp32 = numbers(question.at("fp32").at("probabilities"));
      const auto bf16 = numbers(question.at("bf16").at("probabilities"));
      double& worst = control[std::string(c.reference->at("corpus").as_string())];
      for (size_t i = 0; i < fp32.size(); ++i) worst = std::max(worst, std::abs(bf16[i] - fp32[i]));
    }
  auto backend = make(m.weights, {});
  double worst_vs_fp32 = 0, worst_vs_alone = 0;
  for (const case_result& c : m.cases) {
    // With a shared prefix every case counts: a one-question request also runs otherwise than
    // its probed run (the kept prompt opening, only the last row after the last mixing).
    if (!shares_prefix && c.prepared.questions.size() < 2) continue;
    auto first = backend->run(c.prepared);
    auto second = backend->run(c.prepared);
    BOOST_REQUIRE(first && second);
    const double allowed = 2 * control[std::string(c.reference->at("corpus").as_string())] + 0.01;
    const auto& questions = c.reference->at("questions").as_array();
    for (size_t q = 0; q < c.prepared.questions.size(); ++q) {
      BOOST_TEST(first->at(q).logits == second->at(q).logits, boost::test_tools::per_element());
      if (!shares_prefix) {
        BOOST_TEST(first->at(q).logits == c.logits[q], boost::test_tools::per_element());
        continue;
      }
      const auto fp32 = numbers(questions[q].at("fp32").at("probabilities"));
      const std::vector<float> ours = letter_softmax(first->at(q).logits);
      const std::vector<float> alone = letter_softmax(c.logits[q]);
      double error = 0;
      for (size_t i = 0; i < fp32.size(); ++i) {
        error = std::max(error, std::abs(ours[i] - fp32[i]));
        worst_vs_alone = std::max(worst_vs_alone, double(std::abs(ours[i] - alone[i])));
      }
      worst_vs_fp32 = std::max(worst_vs_fp32, error);
      BOOST_TEST(error <= allowed, "question " << q << " of " << c.reference->at("name"));
    }
  }
  if (shares_prefix)
    BOOST_TEST_MESSAGE("whole requests (shared prefix): max |p - p_fp32| " << worst_vs_fp32
                       << ", max |p - p_question_alone| " << worst_vs_alone);
}

}  // namespace cua_s1::test::parity
