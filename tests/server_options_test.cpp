// Server option parsing: defaults, flags over environment, every malformed value rejected.
#define BOOST_TEST_MODULE server_options
#include <boost/test/unit_test.hpp>
#include <unistd.h>

#include <map>

#include "server/server_options.hpp"

using namespace cua_s1;

namespace {

outcome<server_options> parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return parse_server_options(args, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

void expect_error(std::vector<std::string> args, const std::string& fragment,
                  std::map<std::string, std::string> env = {}) {
  auto result = parse(args, env);
  BOOST_REQUIRE(!result.ok());
  BOOST_TEST(result.error().status == 2);
  BOOST_TEST(result.error().detail.find(fragment) != std::string::npos, result.error().detail);
}

}  // namespace

BOOST_AUTO_TEST_CASE(defaults_serve_the_bundled_model_on_loopback) {
  auto options = parse({});
  BOOST_REQUIRE(options.ok());
  BOOST_TEST(options->model_dir.empty());
  BOOST_TEST(options->host == "127.0.0.1");
  BOOST_TEST(options->port == 8000);
  BOOST_TEST(!options->help);
}

BOOST_AUTO_TEST_CASE(flags_override_environment) {
  auto options = parse({"--port", "9001", "--model=/m", "--threads", "4"},
                       {{"CUA_S1_PORT", "7000"}, {"CUA_S1_HOST", "0.0.0.0"}, {"CUA_S1_ADAPTER", "/a"}});
  BOOST_REQUIRE(options.ok());
  BOOST_TEST(options->port == 9001);
  BOOST_TEST(options->host == "0.0.0.0");
  BOOST_TEST(options->model_dir == "/m");
  BOOST_TEST(options->adapter_dir == "/a");
  BOOST_TEST(options->threads == 4u);
  BOOST_TEST(parse({"--help"})->help);
}

BOOST_AUTO_TEST_CASE(malformed_values_are_named) {
  expect_error({"--port", "70000"}, "--port must be a port 0-65535, not '70000'");
  expect_error({"--port", "12x"}, "--port must be");
  expect_error({"--port"}, "--port needs a port");
  expect_error({"--bogus"}, "unknown option '--bogus'");
  auto mistyped = parse({"--apikey=secret-value"});
  BOOST_REQUIRE(!mistyped.ok());
  BOOST_TEST(mistyped.error().detail.find("unknown option '--apikey'") != std::string::npos);
  BOOST_TEST(mistyped.error().detail.find("secret-value") == std::string::npos);
  expect_error({"--log-level", "loud"}, "--log-level must be debug, info, warning or error");
  expect_error({"--decode-threads", "0"}, "--decode-threads must be a count 1-256");
  expect_error({}, "CUA_S1_PORT must be a port 0-65535, not 'abc'", {{"CUA_S1_PORT", "abc"}});
  expect_error({"--model", ""}, "--model must be a directory");
}

BOOST_AUTO_TEST_CASE(the_jpeg_scan_limit_is_an_option) {
  BOOST_TEST(parse({})->max_jpeg_scans == 100u);
  BOOST_TEST(parse({"--max-jpeg-scans", "500"})->max_jpeg_scans == 500u);
  BOOST_TEST(parse({}, {{"CUA_S1_MAX_JPEG_SCANS", "20"}})->max_jpeg_scans == 20u);
  expect_error({"--max-jpeg-scans", "0"}, "--max-jpeg-scans must be a count >= 1");
}

BOOST_AUTO_TEST_CASE(the_pass_budgets_are_options_with_the_issue_defaults) {
  auto defaults = parse({});
  BOOST_REQUIRE(defaults.ok());
  BOOST_TEST(defaults->max_batch_requests == 8u);
  BOOST_TEST(defaults->max_batch_tokens == 8192u);
  BOOST_TEST(defaults->max_batch_patches == 32768u);
  BOOST_TEST(defaults->batch_wait_us == 0u);
  auto set = parse({"--max-batch-requests", "1", "--max-batch-tokens=4096", "--batch-wait-us", "500"},
                   {{"CUA_S1_MAX_BATCH_PATCHES", "2048"}});
  BOOST_REQUIRE(set.ok());
  BOOST_TEST(set->max_batch_requests == 1u);
  BOOST_TEST(set->max_batch_tokens == 4096u);
  BOOST_TEST(set->max_batch_patches == 2048u);
  BOOST_TEST(set->batch_wait_us == 500u);
  expect_error({"--max-batch-requests", "0"}, "--max-batch-requests must be a count 1-1024");
  expect_error({"--max-batch-requests", "1025"}, "--max-batch-requests must be a count 1-1024");
  expect_error({"--max-batch-tokens", "0"}, "--max-batch-tokens must be a count 1-16777216");
  expect_error({"--max-batch-patches", "-5"}, "--max-batch-patches must be a count 1-16777216");
  expect_error({"--batch-wait-us", "2000000"}, "--batch-wait-us must be microseconds 0-1000000");
}

BOOST_AUTO_TEST_CASE(usage_lists_every_option) {
  std::string usage = server_usage();
  for (const char* flag : {"--model", "--adapter", "--lock", "--host", "--port", "--threads",
                           "--decode-threads", "--max-queued-requests", "--max-queued-questions",
                           "--max-jpeg-scans", "--read-timeout", "--log-level", "--help",
                           "--max-batch-requests", "--max-batch-tokens", "--max-batch-patches",
                           "--batch-wait-us"})
    BOOST_TEST(usage.find(flag) != std::string::npos, flag);
}

// CUA_S1_FAULT_INJECTION (a test hook) is checked with the options: a malformed spec is a bad
// option (status 2), a valid one is kept for load_serving_model.
BOOST_AUTO_TEST_CASE(the_fault_injection_spec_is_checked_with_the_options) {
  BOOST_TEST(parse({})->fault_injection.empty());
  auto options = parse({}, {{"CUA_S1_FAULT_INJECTION", "sticky-error-after:3"}});
  BOOST_REQUIRE(options.ok());
  BOOST_TEST(options->fault_injection == "sticky-error-after:3");
  expect_error({},
               "CUA_S1_FAULT_INJECTION must be sticky-error-after:N with N >= 1, "
               "got \"sticky-error-after:zero\"",
               {{"CUA_S1_FAULT_INJECTION", "sticky-error-after:zero"}});
  expect_error({}, "sticky-error-after:N", {{"CUA_S1_FAULT_INJECTION", "sticky-error-after:0"}});
  expect_error({}, "sticky-error-after:N", {{"CUA_S1_FAULT_INJECTION", ""}});
}

// The connection and body limits: defaults, environment, flags, and the smallest body budget
// (one body of the largest size, 8 MiB: a smaller one would refuse such a body for ever).
BOOST_AUTO_TEST_CASE(connection_and_body_limits) {
  auto defaults = parse({});
  BOOST_REQUIRE(defaults.ok());
  BOOST_TEST(defaults->max_connections == 1024u);
  BOOST_TEST(defaults->max_body_bytes_in_flight == 256u * 1024 * 1024);
  auto set = parse({"--max-connections", "16"}, {{"CUA_S1_MAX_CONNECTIONS", "8"},
                                                 {"CUA_S1_MAX_BODY_BYTES_IN_FLIGHT", "16777216"}});
  BOOST_REQUIRE(set.ok());
  BOOST_TEST(set->max_connections == 16u);
  BOOST_TEST(set->max_body_bytes_in_flight == 16777216u);
  expect_error({"--max-connections", "0"}, "--max-connections must be a count 1-1000000");
  expect_error({"--max-body-bytes-in-flight", "8388607"},
               "--max-body-bytes-in-flight must be a byte count of at least one body (8388608)");
  BOOST_TEST(parse({"--max-body-bytes-in-flight", "8388608"}).ok());
  const std::string usage = server_usage();
  for (const char* name : {"--max-connections", "CUA_S1_MAX_CONNECTIONS", "--max-body-bytes-in-flight",
                           "CUA_S1_MAX_BODY_BYTES_IN_FLIGHT"})
    BOOST_TEST(usage.find(name) != std::string::npos, name);
}

// --allowed-origins / CUA_S1_ALLOWED_ORIGINS: a comma-separated list of origins, normalised
// (lower case, no trailing "/" or default port); anything else is a bad option.
BOOST_AUTO_TEST_CASE(allowed_origins_are_a_list_of_origins) {
  BOOST_TEST(parse({})->allowed_origins.empty());
  auto options = parse({"--allowed-origins", "https://App.Example, http://localhost:3000/,null"});
  BOOST_REQUIRE(options.ok());
  const std::vector<std::string> expected = {"https://app.example", "http://localhost:3000",
                                             "null"};
  BOOST_TEST(options->allowed_origins == expected, boost::test_tools::per_element());
  auto from_environment = parse({}, {{"CUA_S1_ALLOWED_ORIGINS", "http://a.example:80"}});
  BOOST_REQUIRE(from_environment.ok());
  BOOST_TEST(from_environment->allowed_origins == std::vector<std::string>{"http://a.example"},
             boost::test_tools::per_element());
  BOOST_TEST(parse({"--allowed-origins=https://b.example"},
                   {{"CUA_S1_ALLOWED_ORIGINS", "http://a.example"}})
                 ->allowed_origins == std::vector<std::string>{"https://b.example"},
             boost::test_tools::per_element());
  for (const char* bad : {"", "app.example", "https://app.example/path", "https://",
                          "https://a.example,,https://b.example", "https://user@a.example"})
    expect_error({"--allowed-origins", bad}, "--allowed-origins must be a comma-separated list");
  BOOST_TEST(server_usage().find("--allowed-origins") != std::string::npos);
}

// A file in the temporary directory holding `text`, removed with the object.
class temporary_file {
 public:
  explicit temporary_file(const std::string& text) {
    char name[] = "/tmp/cua-s1-keys-XXXXXX";
    const int fd = mkstemp(name);
    BOOST_TEST_REQUIRE(fd >= 0);
    BOOST_TEST_REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    path_ = name;
  }
  ~temporary_file() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

BOOST_AUTO_TEST_CASE(api_keys_come_from_flags_the_variable_and_a_file) {
  BOOST_TEST(parse({})->api_keys.empty());
  BOOST_TEST(!parse({})->metrics_require_key);
  using keys = std::vector<std::string>;
  BOOST_TEST(parse({"--api-key", "k1", "--api-key=k2"})->api_keys == keys({"k1", "k2"}));
  BOOST_TEST(parse({}, {{"CUA_S1_API_KEY", "e1,e2"}})->api_keys == keys({"e1", "e2"}));
  // A command-line key replaces the variable's keys.
  BOOST_TEST(parse({"--api-key", "k1"}, {{"CUA_S1_API_KEY", "e1,e2"}})->api_keys == keys({"k1"}));
  temporary_file file("f1\n\n  \r\nf2\r\n");
  BOOST_TEST(parse({"--api-key-file", file.path()})->api_keys == keys({"f1", "f2"}));
  BOOST_TEST(parse({"--api-key", "k1"}, {{"CUA_S1_API_KEY_FILE", file.path()}})->api_keys ==
             keys({"k1", "f1", "f2"}));
  auto options = parse({"--api-key", "k1", "--metrics-require-key"});
  BOOST_REQUIRE(options.ok());
  BOOST_TEST(options->metrics_require_key);
  BOOST_TEST(parse({"--api-key", "k1"}, {{"CUA_S1_METRICS_REQUIRE_KEY", "on"}})->metrics_require_key);
  std::string usage = server_usage();
  for (const char* flag : {"--api-key", "--api-key-file", "--metrics-require-key", "CUA_S1_API_KEY",
                           "CUA_S1_API_KEY_FILE"})
    BOOST_TEST(usage.find(flag) != std::string::npos, flag);
}

// Unusable keys are refused (status 2) without the key in the message.
BOOST_AUTO_TEST_CASE(unusable_api_keys_are_refused_without_being_shown) {
  for (const std::string secret : {"has space", "tab\tkey", "caf\xc3\xa9", "bell\x07", ""}) {
    BOOST_TEST_CONTEXT(secret) {
      auto result = parse({"--api-key", secret});
      BOOST_REQUIRE(!result.ok());
      BOOST_TEST(result.error().status == 2);
      BOOST_TEST(result.error().detail.find("--api-key must be") != std::string::npos);
      if (!secret.empty()) BOOST_TEST(result.error().detail.find(secret) == std::string::npos);
    }
  }
  auto from_variable = parse({}, {{"CUA_S1_API_KEY", "good,bad key"}});
  BOOST_REQUIRE(!from_variable.ok());
  BOOST_TEST(from_variable.error().detail.find("bad key") == std::string::npos);
  expect_error({"--api-key", "a,b"}, "--api-key must be");
  temporary_file bad_line("ok\nsecret value\n");
  auto from_file = parse({"--api-key-file", bad_line.path()});
  BOOST_REQUIRE(!from_file.ok());
  BOOST_TEST(from_file.error().status == 2);
  BOOST_TEST(from_file.error().detail.find("line 2") != std::string::npos, from_file.error().detail);
  BOOST_TEST(from_file.error().detail.find("secret") == std::string::npos);
  temporary_file empty("\n \n");
  expect_error({"--api-key-file", empty.path()}, "holds no key");
  expect_error({"--api-key-file", "/nonexistent/keys"}, "cannot read the API key file /nonexistent/keys");
  expect_error({"--metrics-require-key"}, "--metrics-require-key needs a key");
}

BOOST_AUTO_TEST_CASE(tls_takes_a_certificate_and_its_key_together) {
  auto plain = parse({});
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(plain->tls_certificate_file.empty());
  BOOST_TEST(plain->tls_key_file.empty());
  auto tls = parse({"--tls-cert", "/c.pem"}, {{"CUA_S1_TLS_KEY", "/k.pem"}});
  BOOST_REQUIRE(tls.ok());
  BOOST_TEST(tls->tls_certificate_file == "/c.pem");
  BOOST_TEST(tls->tls_key_file == "/k.pem");
  expect_error({"--tls-cert", "/c.pem"}, "--tls-cert needs --tls-key");
  expect_error({}, "--tls-key needs --tls-cert", {{"CUA_S1_TLS_KEY", "/k.pem"}});
  expect_error({"--tls-key="}, "--tls-key must be a file");
  BOOST_TEST(server_usage().find("--tls-cert FILE") != std::string::npos);
  BOOST_TEST(server_usage().find("--tls-key FILE") != std::string::npos);
}
