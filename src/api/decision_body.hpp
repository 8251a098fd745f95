// A /v1/systemone body as it came, with the two headers that say how to read it.
#pragma once

#include <string>
#include <utility>

namespace cua_s1 {

struct decision_body {
  decision_body() = default;
  // A JSON body without a coding: a WebSocket message, an embedding host's request.
  decision_body(std::string json) : bytes(std::move(json)) {}  // NOLINT: implicit by design

  std::string bytes;
  std::string content_type;      // the Content-Type value; empty reads as application/json
  std::string content_encoding;  // the Content-Encoding value; empty reads as identity
};

}  // namespace cua_s1
