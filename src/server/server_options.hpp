// Command-line and environment options of the cua-s1-server binary.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/outcome.hpp"

namespace cua_s1 {

struct server_options {
  std::string model_dir;    // --model / CUA_S1_MODEL; empty: the bundled tiny model
  std::string adapter_dir;  // --adapter / CUA_S1_ADAPTER; default: the adapter beside the model
  std::string lock_file;    // --lock / CUA_S1_LOCK; default: MODEL/../weights.lock.json
  std::string host = "127.0.0.1";  // --host / CUA_S1_HOST
  unsigned short port = 8000;      // --port / CUA_S1_PORT
  // --allowed-origins / CUA_S1_ALLOWED_ORIGINS: web pages (scheme://host[:port]) allowed besides
  // the server's own origin, normalised (http/origin_policy.hpp)
  std::vector<std::string> allowed_origins;
  // --tls-cert / CUA_S1_TLS_CERT and --tls-key / CUA_S1_TLS_KEY: PEM certificate chain and
  // private key; both set: HTTPS and wss:// only; both empty: plain HTTP
  std::string tls_certificate_file;
  std::string tls_key_file;
  unsigned threads = 0;            // --threads / CUA_S1_THREADS: backend threads, 0 = all cores
  std::string backend = "auto";    // --backend / CUA_S1_BACKEND: auto, cpu or cuda
  int device = 0;                  // --device / CUA_S1_DEVICE: CUDA device index
  unsigned cuda_graphs = 16;       // --cuda-graphs / CUA_S1_CUDA_GRAPHS: graph cache, 0 = off
  bool merge_language_lora = true;   // --merge-language-lora / CUA_S1_MERGE_LANGUAGE_LORA
  bool keep_prompt_opening = true;   // --keep-prompt-opening / CUA_S1_KEEP_PROMPT_OPENING
  unsigned decode_threads = 2;     // --decode-threads / CUA_S1_DECODE_THREADS
  size_t max_queued_requests = 64;    // --max-queued-requests
  size_t max_queued_questions = 512;  // --max-queued-questions
  unsigned max_jpeg_scans = 100;      // --max-jpeg-scans: more scans in a JPEG -> 422
  // One model pass (actors/pass_budget.hpp): at most this many requests, language rows and
  // vision patches, except a request over a budget on its own, which runs alone.
  size_t max_batch_requests = 8;      // --max-batch-requests
  size_t max_batch_tokens = 8192;     // --max-batch-tokens
  size_t max_batch_patches = 32768;   // --max-batch-patches
  unsigned batch_wait_us = 0;  // --batch-wait-us: a pass not full waits this long for more
  size_t max_connections = 1024;      // --max-connections: more are answered 503 and closed
  size_t max_body_bytes_in_flight = 256u << 20;  // --max-body-bytes-in-flight: beyond, 503
  unsigned read_timeout_seconds = 15;  // --read-timeout
  unsigned drain_timeout_seconds = 30;  // --drain-timeout: graceful shutdown limit
  unsigned request_timeout_seconds = 30;  // --request-timeout: work not started by then -> 503
  std::string log_level = "info";      // --log-level debug|info|warning|error
  // The keys /v1/* and the WebSocket require as "Authorization: Bearer <key>"; none: open.
  // --api-key KEY (repeatable) or CUA_S1_API_KEY (comma-separated), and the keys of
  // --api-key-file FILE / CUA_S1_API_KEY_FILE (one a line).
  std::vector<std::string> api_keys;
  bool metrics_require_key = false;  // --metrics-require-key: /metrics needs a key too
  // CUA_S1_FAULT_INJECTION, for tests of the fatal-error path only (server/fault_injection.hpp):
  // a valid spec, applied to the backend by load_serving_model; empty: none.
  std::string fault_injection;
  bool help = false;
};

// The --help text.
std::string server_usage();

// Parses `arguments` (without argv[0]) over the environment variables read through `getenv`
// (a command-line option wins over its variable). A failure (status 2) says what is wrong.
outcome<server_options> parse_server_options(const std::vector<std::string>& arguments,
                                             const std::function<const char*(const char*)>& getenv);

}  // namespace cua_s1
