// cua-s1-prepare as a process: output equal to the Transformers reference record, body limit,
// usage and model-directory errors.
#define BOOST_TEST_MODULE prepare_cli
#include <sys/wait.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>

#include "test_support.hpp"

using namespace cua_s1;
namespace json = boost::json;

namespace {

const std::string binary = std::string(CUA_S1_BINARY_DIR) + "/src/cua-s1-prepare";
const std::string model_dir = std::string(CUA_S1_BINARY_DIR) + "/fixtures/qwen35";

struct run_result {
  int exit_code = -1;
  std::string out;
};

run_result run(const std::string& arguments) {
  run_result result;
  FILE* pipe = popen((binary + " " + arguments + " 2>/dev/null").c_str(), "r");
  BOOST_REQUIRE(pipe);
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

BOOST_AUTO_TEST_CASE(output_equals_the_reference_record) {
  auto expected = test::read_json_fixture("prepare/expected.json").as_object();
  for (const char* name : {"std-two-questions", "bnd-narrow", "std-jpeg", "ext-jpeg444"}) {
    auto result = run("--model " + model_dir + " " +
                      test::fixture_path(std::string("prepare/requests/") + name + ".json"));
    BOOST_TEST_CONTEXT("request " << name) {
      BOOST_TEST(result.exit_code == 0);
      BOOST_TEST(json::parse(result.out) == expected.at(name));
    }
  }
}

BOOST_AUTO_TEST_CASE(rejections_are_printed_with_exit_code_zero) {
  auto dir = std::filesystem::temp_directory_path() / "cua_s1_prepare_cli_test";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& body) {
    auto path = dir / name;
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(body.data(), 1, body.size(), f);
    std::fclose(f);
    return path.string();
  };
  auto huge = run("--model " + model_dir + " " + write("huge.json", std::string(8 * 1024 * 1024 + 1, ' ')));
  BOOST_TEST(huge.exit_code == 0);
  BOOST_TEST(json::parse(huge.out) == json::parse(R"({"status":413,"detail":"request exceeds body limit"})"));
  auto dup = run("--model " + model_dir + " " + write("dup.json", R"({"a":1,"a":2})"));
  BOOST_TEST(json::parse(dup.out) ==
             json::parse(R"({"status":400,"detail":"duplicate JSON keys are not supported"})"));
  auto empty = run("--model " + model_dir + " " + write("empty.json", "{}"));
  BOOST_TEST(json::parse(empty.out) ==
             json::parse(R"({"status":422,"detail":"request must contain model, state and questions only"})"));
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(usage_and_load_errors_have_their_own_exit_codes) {
  auto help = run("--help");
  BOOST_TEST(help.exit_code == 0);
  BOOST_TEST(help.out.find("usage: cua-s1-prepare --model DIR REQUEST.json") == 0u);
  BOOST_TEST(run("").exit_code == 2);
  BOOST_TEST(run("--bogus x").exit_code == 2);
  BOOST_TEST(run("--model /nonexistent " + test::fixture_path("prepare/requests/std-small.json"))
                 .exit_code == 1);
  BOOST_TEST(run("--model " + model_dir + " /nonexistent.json").exit_code == 1);
}
