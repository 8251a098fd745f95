// The 422 content rules of spec/contract.md section 3.2, in the reference worker's order.
#pragma once

#include "api/decision_request.hpp"
#include "api/json_value.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// Validates a parsed body (a JSON object) up to and including the `state` shape; the image
// itself is checked afterwards by the codec (decode_image_data_url). Takes the body by value
// so that a caller can move it in and the (large) image string is not copied.
outcome<decision_request> validate_request(json_value body);

}  // namespace cua_s1
