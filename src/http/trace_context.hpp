// W3C Trace Context (https://www.w3.org/TR/trace-context/): the client's `traceparent` header,
// accepted when well formed, echoed in the answer and its trace id logged. A malformed one is
// ignored, never an error.
#pragma once

#include <string>
#include <string_view>

namespace cua_s1 {

// `header` when it is a valid traceparent: version (2 lowercase hex, not "ff"), a 32-hex trace
// id and a 16-hex parent id not all zeros, 2-hex flags, separated by '-'. Version 00 has exactly
// these four fields; a later version may add more after another '-', which are dropped (its
// first four fields are returned). Else empty.
std::string valid_traceparent(std::string_view header);

// The trace id of a valid traceparent (its 32 hex digits); empty for an empty one.
std::string_view trace_id_of(std::string_view traceparent);

}  // namespace cua_s1
