// GET /v1/models as JSON.
#include "http/model_list.hpp"

#include "api/decision_request.hpp"
#include "api/python_json.hpp"

namespace cua_s1 {

std::string model_list_body(const std::string& weights_description) {
  std::string out = "{\"models\":[{\"name\":\"";
  append_json_string_body(out, request_model_name);
  out += "\",\"description\":\"";
  append_json_string_body(out,
                          std::string("Closed-choice UI decisions (choice questions, 1-26 options) "
                                      "from one screenshot: Qwen3.5-4B with the cua-s1-4b-0.2 "
                                      "multimodal LoRA. Weights served: ") +
                              weights_description);
  out += "\",\"release_date\":\"";
  out += served_model_release_date;
  out += "\"}]}";
  return out;
}

}  // namespace cua_s1
