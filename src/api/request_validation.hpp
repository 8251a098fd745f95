// The 422 content rules of spec/contract.md section 3.2, in the reference worker's order.
#pragma once

#include "api/decision_request.hpp"
#include "api/json_value.hpp"
#include "api/multipart_form.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// Validates a parsed body (a JSON object) up to and including the `state` shape; the image
// itself is checked afterwards by the codec (decode_image_data_url). Takes the body by value
// so that a caller can move it in and the (large) image string is not copied. Besides
// `state.image`, the image may come as an asset (asset_forms.hpp): inline, or a part of `form`,
// the multipart body whose `request` part `body` was (nullptr for a JSON body).
outcome<decision_request> validate_request(json_value body, const multipart_form* form = nullptr);

}  // namespace cua_s1
