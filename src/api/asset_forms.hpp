// The System One asset forms of an image (spec/contract.md 1.7): a top-level `assets` map whose
// entries are inline base64 or multipart parts, named from `state`. They resolve to the same
// data URL as today's `state.image`, so nothing after validation knows which form came in.
#pragma once

#include <string>
#include <vector>

#include "api/decision_request.hpp"
#include "api/json_value.hpp"
#include "api/multipart_form.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

// The name of the multipart part that holds the request's JSON.
inline constexpr const char* request_part_name = "request";

// Whether `state`, beside an `assets` map, is in the asset form: anything but today's
// {"image": "data:..."}, which never names an asset (with it `assets` is an unknown key).
bool state_refers_to_assets(const json_value& state);

// The most entries an `assets` map may hold (a multipart body holds at most 8 parts).
inline constexpr size_t max_assets = 8;

// The one image that `state` names in `assets`, as a data URL: an inline entry's base64 under the
// prefix of its format, a part's bytes under the prefix of the format they start with. 422, with
// a detail that says which: a malformed `assets` map or entry, more than max_assets entries, a part entry without a multipart
// body, a part missing, claimed twice or claimed by no asset, an asset's reference inside
// instructions or criteria, a state with text, with two images or naming a missing asset, an
// asset that state does not use. Takes `assets` to move the (large) base64 out of it.
outcome<std::string> resolve_asset_image(const json_value& state, json_value& assets,
                                         const std::vector<choice_question>& questions,
                                         const multipart_form* form);

// 422 when `form` holds parts besides `request` while the request names none (no `assets`).
outcome<bool> check_no_unclaimed_parts(const multipart_form* form);

}  // namespace cua_s1
