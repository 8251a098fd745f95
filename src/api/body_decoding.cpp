// One body through the decoding stage; each step's rules live in its own file.
#include "api/body_decoding.hpp"

#include <cctype>
#include <string>

#include "api/asset_forms.hpp"
#include "api/multipart_form.hpp"
#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "codec/content_decoding.hpp"

namespace cua_s1 {

std::optional<body_media> parse_body_media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  std::string lower(type);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (content_type.empty() || lower == "application/json") return body_media::json;
  if (lower == "multipart/form-data") return body_media::multipart;
  return std::nullopt;
}

outcome<decision_request> decode_decision_body(decision_body body) {
  const auto media = parse_body_media_type(body.content_type);
  if (!media) return failure{415, std::string(unreadable_media_type)};
  const auto coding = parse_content_encoding(body.content_encoding);
  if (!coding) return failure{415, std::string(unreadable_coding)};
  auto decoded = decode_content(std::move(body.bytes), *coding, max_body_bytes);
  if (!decoded) return decoded.error();
  if (*media == body_media::json) {
    auto parsed = parse_strict_json(*decoded);
    if (!parsed) return parsed.error();
    return validate_request(std::move(*parsed));
  }
  auto form = parse_multipart_form(body.content_type, *decoded);
  if (!form) return form.error();
  decoded->clear();
  decoded->shrink_to_fit();  // the parts hold their own copies
  const form_part* request_part = form->find(request_part_name);
  if (!request_part) return unprocessable("a multipart body needs a part named request");
  auto parsed = parse_strict_json(request_part->content);
  if (!parsed) return parsed.error();
  return validate_request(std::move(*parsed), &*form);
}

}  // namespace cua_s1
