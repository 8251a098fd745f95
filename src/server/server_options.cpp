// Option parsing with clear messages for every malformed value.
#include "server/server_options.hpp"

#include <charconv>
#include <functional>
#include <limits>

#include "api/decision_request.hpp"
#include "http/origin_policy.hpp"
#include "server/api_key_sources.hpp"
#include "server/fault_injection.hpp"

namespace cua_s1 {
namespace {

failure usage_error(const std::string& what) { return {2, what + " (see --help)"}; }

template <class T>
bool parse_number(const std::string& text, T& out, T minimum, T maximum) {
  unsigned long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  if (value < static_cast<unsigned long long>(minimum) ||
      value > static_cast<unsigned long long>(maximum))
    return false;
  out = static_cast<T>(value);
  return true;
}

}  // namespace

std::string server_usage() {
  return "usage: cua-s1-server [options]\n"
         "\n"
         "Serves POST /v1/systemone (screenshot decisions), the WebSocket /v1/systemone/ws,\n"
         "GET /v1/models, GET /health and GET /metrics.\n"
         "Without --model it serves the bundled tiny model (random weights, for trying the API),\n"
         "found at BINDIR/../share/cua-s1/tiny when installed, else in the source tree built.\n"
         "\n"
         "Model:\n"
         "  --model DIR             Qwen3.5-4B base directory (config.json, safetensors shards,\n"
         "                          tokenizer.json, preprocessor_config.json)     [CUA_S1_MODEL]\n"
         "  --adapter DIR           the cua-s1-4b-0.2 multimodal/ adapter directory\n"
         "                          (default: MODEL/../cua-s1-4b-0.2/multimodal)  [CUA_S1_ADAPTER]\n"
         "  --lock FILE             weights lock, every file checked by size and SHA-256\n"
         "                          (default: MODEL/../weights.lock.json)         [CUA_S1_LOCK]\n"
         "  --backend NAME          cuda, cpu, or auto = cuda when this build has it and a GPU\n"
         "                          is present, else cpu (auto)                 [CUA_S1_BACKEND]\n"
         "  --device N              CUDA device index (0)                        [CUA_S1_DEVICE]\n"
         "  --cuda-graphs N         language CUDA graphs cached, one per prompt segment\n"
         "                          shape (shared prefix, batch of suffixes or of whole\n"
         "                          prompts, keyed by their lengths), and vision graphs,\n"
         "                          one per image size (at most 4);\n"
         "                          0 = run eagerly (16)                     [CUA_S1_CUDA_GRAPHS]\n"
         "  --merge-language-lora on|off  merge the language LoRA into the bf16 weights at\n"
         "                          load on the GPU (on)           [CUA_S1_MERGE_LANGUAGE_LORA]\n"
         "  --keep-prompt-opening on|off  keep the K/V rows and GDN state of the system\n"
         "                          text that opens every prompt on the GPU between\n"
         "                          requests (on)                 [CUA_S1_KEEP_PROMPT_OPENING]\n"
         "  --threads N             CPU backend compute threads, 0 = all cores (0) [CUA_S1_THREADS]\n"
         "Serving:\n"
         "  --host ADDRESS          bind address (127.0.0.1)                     [CUA_S1_HOST]\n"
         "  --port PORT             TCP port, 0 = any free port (8000)           [CUA_S1_PORT]\n"
         "  --allowed-origins LIST  comma-separated web origins (scheme://host[:port]) whose\n"
         "                          pages may call the server besides its own; a request\n"
         "                          with any other Origin gets 403 (none)\n"
         "                                                        [CUA_S1_ALLOWED_ORIGINS]\n"
         "  --tls-cert FILE         serve HTTPS and wss:// only, with this PEM certificate\n"
         "                          chain (the server's certificate first, then its\n"
         "                          intermediates); needs --tls-key        [CUA_S1_TLS_CERT]\n"
         "  --tls-key FILE          the certificate's PEM private key, unencrypted\n"
         "                          (TLS 1.2 and 1.3 only)                  [CUA_S1_TLS_KEY]\n"
         "  --decode-threads N      image decode/preprocess threads (2)  [CUA_S1_DECODE_THREADS]\n"
         "  --max-queued-requests N requests admitted at once; more get 503 (64)\n"
         "                                                     [CUA_S1_MAX_QUEUED_REQUESTS]\n"
         "  --max-queued-questions N  questions admitted at once (512)\n"
         "                                                     [CUA_S1_MAX_QUEUED_QUESTIONS]\n"
         "  --max-jpeg-scans N      a JPEG of more scans is refused (422 invalid image data;\n"
         "                          encoders write 6-10) (100)        [CUA_S1_MAX_JPEG_SCANS]\n"
         "  --max-batch-requests N  requests the model runs in one pass; more wait for the\n"
         "                          next pass (8)                [CUA_S1_MAX_BATCH_REQUESTS]\n"
         "  --max-batch-tokens N    language rows of one pass: each request's shared prefix\n"
         "                          once plus each question's suffix (8192)\n"
         "                                                       [CUA_S1_MAX_BATCH_TOKENS]\n"
         "  --max-batch-patches N   vision patches of one pass (32768: eight 1280x720\n"
         "                          screenshots)                  [CUA_S1_MAX_BATCH_PATCHES]\n"
         "                          A pass takes ready requests in order while they fit\n"
         "                          and stops at the first that does not; a request over\n"
         "                          a budget on its own runs alone. Larger passes: more\n"
         "                          decisions a second under load, more GPU memory, and\n"
         "                          each request waits for its whole pass\n"
         "  --batch-wait-us N       microseconds a pass that is not full waits for more\n"
         "                          requests; 0 = start as soon as the model is free\n"
         "                          (0)                                [CUA_S1_BATCH_WAIT_US]\n"
         "  --max-connections N     connections open at once; more are answered 503 and\n"
         "                          closed (1024)                   [CUA_S1_MAX_CONNECTIONS]\n"
         "  --max-body-bytes-in-flight BYTES  request bodies held at once, a chunked one\n"
         "                          counted as 8 MiB; a body beyond is answered 503 before\n"
         "                          it is read (268435456 = 256 MiB)\n"
         "                                                [CUA_S1_MAX_BODY_BYTES_IN_FLIGHT]\n"
         "  --read-timeout SECONDS  time allowed to send a request (15)   [CUA_S1_READ_TIMEOUT]\n"
         "  --request-timeout SECONDS  work not started this long after the request arrived\n"
         "                          is dropped with 503 (30)          [CUA_S1_REQUEST_TIMEOUT]\n"
         "  --drain-timeout SECONDS on SIGTERM/SIGINT, time to finish admitted requests\n"
         "                          before exiting (30)                 [CUA_S1_DRAIN_TIMEOUT]\n"
         "  --log-level LEVEL       debug, info, warning or error (info)     [CUA_S1_LOG_LEVEL]\n"
         "  -h, --help              show this help\n"
         "API keys:\n"
         "  --api-key KEY           require \"Authorization: Bearer KEY\" on /v1/* and the\n"
         "                          WebSocket (else 401); repeat for several keys; keys are\n"
         "                          printable ASCII. The variable is comma-separated and is\n"
         "                          replaced by any --api-key (none: no key needed)\n"
         "                                                           [CUA_S1_API_KEY]\n"
         "  --api-key-file FILE     more keys, one a line (blank lines ignored)\n"
         "                                                      [CUA_S1_API_KEY_FILE]\n"
         "  --metrics-require-key   /metrics needs a key too (/health* never does)\n"
         "                                               [CUA_S1_METRICS_REQUIRE_KEY=on]\n"
         "                          Without a key, a non-loopback --host logs a warning.\n"
         "\n"
         "A reverse proxy (nginx, Caddy) in front of a plain-HTTP server is the alternative to\n"
         "TLS here.\n"
         "\n"
         "SIGTERM/SIGINT: unready, stop accepting, finish admitted requests, exit 0; a second\n"
         "signal, or work left at --drain-timeout, exits 1 at once.\n"
         "Logs are JSON lines on stderr. Exit codes: 0 after a clean shutdown, 1 when the model\n"
         "cannot be loaded, the address cannot be bound, the GPU failed or the drain was cut\n"
         "short, 2 for bad options (an unreadable or mismatched TLS certificate and key too).\n";
}

outcome<server_options> parse_server_options(const std::vector<std::string>& arguments,
                                             const std::function<const char*(const char*)>& getenv) {
  server_options options;
  // Each option: its flag, its environment variable and how to store a value.
  struct option_spec {
    const char* flag;
    const char* variable;
    std::function<bool(const std::string&)> store;
    const char* expects;
    bool secret = false;  // its value is never repeated in a message
  };
  // A command-line --api-key (--api-key-file) replaces the keys (the file) of the variable.
  bool on_command_line = false, keys_from_command_line = false;
  std::vector<std::string> listed_keys;
  std::string key_file;
  const std::vector<option_spec> specs = {
      {"--model", "CUA_S1_MODEL", [&](const std::string& v) { return !(options.model_dir = v).empty(); }, "a directory"},
      {"--adapter", "CUA_S1_ADAPTER", [&](const std::string& v) { return !(options.adapter_dir = v).empty(); }, "a directory"},
      {"--lock", "CUA_S1_LOCK", [&](const std::string& v) { return !(options.lock_file = v).empty(); }, "a file"},
      {"--host", "CUA_S1_HOST", [&](const std::string& v) { return !(options.host = v).empty(); }, "an address"},
      {"--port", "CUA_S1_PORT", [&](const std::string& v) { return parse_number<unsigned short>(v, options.port, 0, 65535); }, "a port 0-65535"},
      {"--allowed-origins", "CUA_S1_ALLOWED_ORIGINS", [&](const std::string& v) {
         auto origins = parse_allowed_origins(v);
         if (origins) options.allowed_origins = std::move(*origins);
         return origins.has_value();
       }, "a comma-separated list of origins scheme://host[:port]"},
      {"--tls-cert", "CUA_S1_TLS_CERT", [&](const std::string& v) { return !(options.tls_certificate_file = v).empty(); }, "a file"},
      {"--tls-key", "CUA_S1_TLS_KEY", [&](const std::string& v) { return !(options.tls_key_file = v).empty(); }, "a file"},
      {"--threads", "CUA_S1_THREADS", [&](const std::string& v) { return parse_number<unsigned>(v, options.threads, 0, 1024); }, "a count 0-1024"},
      {"--backend", "CUA_S1_BACKEND", [&](const std::string& v) { options.backend = v; return v == "auto" || v == "cpu" || v == "cuda"; }, "auto, cpu or cuda"},
      {"--device", "CUA_S1_DEVICE", [&](const std::string& v) { return parse_number<int>(v, options.device, 0, 1023); }, "a device index 0-1023"},
      {"--cuda-graphs", "CUA_S1_CUDA_GRAPHS", [&](const std::string& v) { return parse_number<unsigned>(v, options.cuda_graphs, 0, 1024); }, "a count 0-1024"},
      {"--merge-language-lora", "CUA_S1_MERGE_LANGUAGE_LORA", [&](const std::string& v) { options.merge_language_lora = v == "on"; return v == "on" || v == "off"; }, "on or off"},
      {"--keep-prompt-opening", "CUA_S1_KEEP_PROMPT_OPENING", [&](const std::string& v) { options.keep_prompt_opening = v == "on"; return v == "on" || v == "off"; }, "on or off"},
      {"--decode-threads", "CUA_S1_DECODE_THREADS", [&](const std::string& v) { return parse_number<unsigned>(v, options.decode_threads, 1, 256); }, "a count 1-256"},
      {"--max-queued-requests", "CUA_S1_MAX_QUEUED_REQUESTS", [&](const std::string& v) { return parse_number<size_t>(v, options.max_queued_requests, 1, 1000000); }, "a count >= 1"},
      {"--max-queued-questions", "CUA_S1_MAX_QUEUED_QUESTIONS", [&](const std::string& v) { return parse_number<size_t>(v, options.max_queued_questions, 8, 8000000); }, "a count >= 8"},
      {"--max-batch-requests", "CUA_S1_MAX_BATCH_REQUESTS", [&](const std::string& v) { return parse_number<size_t>(v, options.max_batch_requests, 1, 1024); }, "a count 1-1024"},
      {"--max-batch-tokens", "CUA_S1_MAX_BATCH_TOKENS", [&](const std::string& v) { return parse_number<size_t>(v, options.max_batch_tokens, 1, size_t{1} << 24); }, "a count 1-16777216"},
      {"--max-batch-patches", "CUA_S1_MAX_BATCH_PATCHES", [&](const std::string& v) { return parse_number<size_t>(v, options.max_batch_patches, 1, size_t{1} << 24); }, "a count 1-16777216"},
      {"--batch-wait-us", "CUA_S1_BATCH_WAIT_US", [&](const std::string& v) { return parse_number<unsigned>(v, options.batch_wait_us, 0, 1000000); }, "microseconds 0-1000000"},
      {"--max-jpeg-scans", "CUA_S1_MAX_JPEG_SCANS", [&](const std::string& v) { return parse_number<unsigned>(v, options.max_jpeg_scans, 1, 1000000); }, "a count >= 1"},
      {"--max-connections", "CUA_S1_MAX_CONNECTIONS", [&](const std::string& v) { return parse_number<size_t>(v, options.max_connections, 1, 1000000); }, "a count 1-1000000"},
      {"--max-body-bytes-in-flight", "CUA_S1_MAX_BODY_BYTES_IN_FLIGHT", [&](const std::string& v) { return parse_number<size_t>(v, options.max_body_bytes_in_flight, max_body_bytes, size_t{1} << 40); }, "a byte count of at least one body (8388608) and at most 2^40"},
      {"--read-timeout", "CUA_S1_READ_TIMEOUT", [&](const std::string& v) { return parse_number<unsigned>(v, options.read_timeout_seconds, 1, 3600); }, "seconds 1-3600"},
      {"--request-timeout", "CUA_S1_REQUEST_TIMEOUT", [&](const std::string& v) { return parse_number<unsigned>(v, options.request_timeout_seconds, 1, 3600); }, "seconds 1-3600"},
      {"--drain-timeout", "CUA_S1_DRAIN_TIMEOUT", [&](const std::string& v) { return parse_number<unsigned>(v, options.drain_timeout_seconds, 0, 3600); }, "seconds 0-3600"},
      {"--api-key", "CUA_S1_API_KEY", [&](const std::string& v) {
         if (on_command_line && !keys_from_command_line) listed_keys.clear();
         keys_from_command_line = on_command_line;
         auto keys = split_api_keys(v);
         if (keys) listed_keys.insert(listed_keys.end(), keys->begin(), keys->end());
         return keys.ok() && (!on_command_line || keys->size() == 1);
       }, "printable ASCII without whitespace, control characters or commas (key not shown)", true},
      {"--api-key-file", "CUA_S1_API_KEY_FILE", [&](const std::string& v) { return !(key_file = v).empty(); }, "a file"},
      {"--metrics-require-key", "CUA_S1_METRICS_REQUIRE_KEY", [&](const std::string& v) { options.metrics_require_key = v == "on"; return v == "on" || v == "off"; }, "on or off"},
      {"--log-level", "CUA_S1_LOG_LEVEL", [&](const std::string& v) { options.log_level = v; return v == "debug" || v == "info" || v == "warning" || v == "error"; }, "debug, info, warning or error"},
  };
  for (const auto& spec : specs) {
    const char* value = getenv(spec.variable);
    if (value && *value && !spec.store(value))
      return usage_error(std::string(spec.variable) + " must be " + spec.expects +
                         (spec.secret ? std::string() : std::string(", not '") + value + "'"));
  }
  on_command_line = true;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& arg = arguments[i];
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      continue;
    }
    if (arg == "--metrics-require-key") {  // a bare flag; --metrics-require-key=on|off too
      options.metrics_require_key = true;
      continue;
    }
    std::string flag = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq), value = arg.substr(eq + 1), has_value = true;
    }
    const option_spec* spec = nullptr;
    for (const auto& s : specs)
      if (flag == s.flag) spec = &s;
    // Named without its value: a mistyped key option (--apikey=KEY) must not print the key.
    if (!spec) return usage_error("unknown option '" + flag + "'");
    if (!has_value) {
      if (i + 1 >= arguments.size()) return usage_error(flag + " needs " + spec->expects);
      value = arguments[++i];
    }
    if (!spec->store(value))
      return usage_error(flag + " must be " + spec->expects +
                         (spec->secret ? std::string() : ", not '" + value + "'"));
  }
  options.api_keys = std::move(listed_keys);
  if (!key_file.empty()) {
    auto keys = read_api_key_file(key_file);
    if (!keys) return keys.error();
    options.api_keys.insert(options.api_keys.end(), keys->begin(), keys->end());
  }
  if (options.metrics_require_key && options.api_keys.empty())
    return usage_error("--metrics-require-key needs a key (--api-key or --api-key-file)");
  if (options.tls_certificate_file.empty() != options.tls_key_file.empty())
    return usage_error(options.tls_key_file.empty() ? "--tls-cert needs --tls-key"
                                                    : "--tls-key needs --tls-cert");
  if (const char* fault = getenv(fault_injection_variable)) {  // a test hook, not in --help
    auto runs = parse_fault_injection(fault);
    if (!runs) return failure{2, runs.error().detail};
    options.fault_injection = fault;
  }
  return options;
}

}  // namespace cua_s1
