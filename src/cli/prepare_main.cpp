// cua-s1-prepare: runs the server's validation, decoding, preprocessing and tokenization on one
// request file and prints the model inputs (or the rejection) as one JSON object.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "api/decision_answer.hpp"
#include "api/python_json.hpp"
#include "common/sha256.hpp"
#include "prep/request_preparer.hpp"

namespace {

constexpr const char* usage_text =
    "usage: cua-s1-prepare --model DIR REQUEST.json\n"
    "\n"
    "Runs exactly the server's request validation, image decoding, preprocessing and\n"
    "tokenization on REQUEST.json (a /v1/systemone body) and prints one JSON object:\n"
    "  {\"status\":200,\"image\":{...,\"rgb_sha256\":..,\"pixel_values_sha256\":..},\n"
    "   \"questions\":[{\"name\",\"input_ids\",\"position_ids\",\"option_keys\",\"letter_ids\"}],\n"
    "   \"input_tokens\":N}\n"
    "or {\"status\":400|413|422,\"detail\":\"...\"}; the exit code is 0 in all these cases.\n"
    "\n"
    "  --model DIR   upstream base-model directory; only config.json, tokenizer.json and\n"
    "                preprocessor_config.json are read\n"
    "  -h, --help    show this help\n"
    "\n"
    "Exit codes: 0 answered, 1 model directory or request file unusable, 2 bad usage.\n";

void append_int_array(std::string& out, const std::vector<int32_t>& values) {
  out.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(values[i]);
  }
  out.push_back(']');
}

void append_string(std::string& out, const std::string& text) {
  out.push_back('"');
  cua_s1::append_json_string_body(out, text);
  out.push_back('"');
}

std::string describe(const cua_s1::prepared_request& prepared) {
  const auto& px = prepared.pixels;
  std::string out = "{\"status\":200,\"image\":{";
  out += "\"width\":" + std::to_string(prepared.image.width);
  out += ",\"height\":" + std::to_string(prepared.image.height);
  out += ",\"resized_width\":" + std::to_string(px.resized.width);
  out += ",\"resized_height\":" + std::to_string(px.resized.height);
  out += ",\"grid_thw\":[1," + std::to_string(px.grid.h) + "," + std::to_string(px.grid.w) + "]";
  out += ",\"rgb_sha256\":\"" +
         cua_s1::sha256_hex(prepared.image.pixels.data(), prepared.image.pixels.size()) + "\"";
  out += ",\"pixel_values_sha256\":\"" +
         cua_s1::sha256_hex(px.pixel_values.data(), px.pixel_values.size() * sizeof(float)) + "\"},";
  out += "\"questions\":[";
  for (size_t q = 0; q < prepared.questions.size(); ++q) {
    const auto& question = prepared.questions[q];
    const auto& source = prepared.request.questions[q];
    if (q) out.push_back(',');
    out += "{\"name\":";
    append_string(out, source.name);
    out += ",\"input_ids\":";
    append_int_array(out, question.input_ids);
    out += ",\"position_ids\":[";
    for (size_t axis = 0; axis < 3; ++axis) {
      if (axis) out.push_back(',');
      append_int_array(out, question.positions.axes[axis]);
    }
    out += "],\"option_keys\":[";
    for (size_t i = 0; i < source.keys.size(); ++i) {
      if (i) out.push_back(',');
      append_string(out, source.keys[i]);
    }
    out += "],\"letter_ids\":";
    append_int_array(out, question.letter_ids);
    out.push_back('}');
  }
  out += "],\"input_tokens\":" + std::to_string(prepared.input_tokens) + "}";
  return out;
}

std::string rejection(const cua_s1::failure& error) {
  std::string out = "{\"status\":" + std::to_string(error.status) + ",\"detail\":";
  append_string(out, error.detail);
  return out + "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_dir, request_path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage_text, stdout);
      return 0;
    } else if (arg == "--model" && i + 1 < argc) {
      model_dir = argv[++i];
    } else if (arg.rfind("--model=", 0) == 0) {
      model_dir = arg.substr(8);
    } else if (!arg.empty() && arg[0] != '-' && request_path.empty()) {
      request_path = arg;
    } else {
      std::fprintf(stderr, "cua-s1-prepare: unexpected argument '%s'\n\n%s", arg.c_str(), usage_text);
      return 2;
    }
  }
  if (model_dir.empty() || request_path.empty()) {
    std::fputs(usage_text, stderr);
    return 2;
  }

  std::ifstream in(request_path, std::ios::binary | std::ios::ate);
  if (!in) {
    std::fprintf(stderr, "cua-s1-prepare: cannot read %s: %s\n", request_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  auto preparer = cua_s1::request_preparer::load(model_dir);
  if (!preparer) {
    std::fprintf(stderr, "cua-s1-prepare: cannot load model directory: %s\n",
                 preparer.error().detail.c_str());
    return 1;
  }
  const auto size = static_cast<size_t>(in.tellg());
  if (size > cua_s1::max_body_bytes) {
    std::puts(rejection({413, "request exceeds body limit"}).c_str());
    return 0;
  }
  std::string body(size, '\0');
  in.seekg(0);
  in.read(body.data(), static_cast<std::streamsize>(size));

  auto prepared = preparer->prepare(body);
  std::string out = prepared ? describe(*prepared) : rejection(prepared.error());
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}
