// The body-decoding stage: content coding, then multipart, then strict JSON and the contract,
// from a body as it came to the validated request.
#pragma once

#include <optional>
#include <string_view>

#include "api/decision_body.hpp"
#include "api/decision_request.hpp"
#include "common/outcome.hpp"

namespace cua_s1 {

enum class body_media { json, multipart };

// The media type of a Content-Type value (parameters aside, case-insensitive): application/json
// (also an absent value) or multipart/form-data; nullopt for any other, which is 415.
std::optional<body_media> parse_body_media_type(std::string_view content_type);

// The 415 details, the same whether the header stage (routes) or this stage refuses.
inline constexpr std::string_view unreadable_media_type =
    "Content-Type must be application/json or multipart/form-data";
inline constexpr std::string_view unreadable_coding =
    "Content-Encoding must be gzip, zstd or identity";

// `body` decoded and validated: 415 for a media type or coding the server does not read
// (routes refuse them on the headers already); the content decoding's 400/413; the multipart
// form's 400/413 and 422 without a `request` part; the JSON's 400; the contract's 422.
outcome<decision_request> decode_decision_body(decision_body body);

}  // namespace cua_s1
