// Asset entries checked in one pass (shape, parts), then the text, then what state names.
#include "api/asset_forms.hpp"

#include <algorithm>
#include <string_view>

#include "codec/codec_errors.hpp"
#include "codec/data_url.hpp"
#include "codec/image_format.hpp"

namespace cua_s1 {
namespace {

// One checked `assets` entry.
struct asset_entry {
  const std::string* name = nullptr;  // its key in `assets`
  json_value* data_base64 = nullptr;  // inline: the base64 text
  image_mime mime = image_mime::png;  // inline: from `format`
  const form_part* part = nullptr;    // multipart: the part it claims
};

bool has_exactly(const json_value& entry, std::initializer_list<std::string_view> keys) {
  if (entry.members.size() != keys.size()) return false;
  for (auto key : keys)
    if (!entry.find(key) || !entry.find(key)->is_string()) return false;
  return true;
}

outcome<asset_entry> check_entry(json_member& member, const multipart_form* form) {
  json_value& entry = member.value;
  const json_value* type = entry.is_object() ? entry.find("type") : nullptr;
  if (!type || !type->is_string() || type->text != "image")
    return unprocessable("assets entries must be {\"type\": \"image\", ...}");
  asset_entry checked;
  checked.name = &member.key;
  if (has_exactly(entry, {"type", "format", "data_base64"})) {
    const std::string& format = entry.find("format")->text;
    if (format == "png")
      checked.mime = image_mime::png;
    else if (format == "jpg" || format == "jpeg")
      checked.mime = image_mime::jpeg;
    else
      return unprocessable("asset format must be png, jpg or jpeg");
    checked.data_base64 = entry.find("data_base64");
    return checked;
  }
  if (has_exactly(entry, {"type", "part"})) {
    if (!form) return unprocessable("assets entries with a part need a multipart/form-data body");
    const std::string& part = entry.find("part")->text;
    checked.part = part == request_part_name ? nullptr : form->find(part);
    if (!checked.part) return unprocessable("an asset names a part the body does not hold");
    return checked;
  }
  return unprocessable(
      "assets entries must be {\"type\": \"image\", \"format\": \"png\"|\"jpg\"|\"jpeg\", "
      "\"data_base64\": ...} or {\"type\": \"image\", \"part\": ...}");
}

// The SDKs write an image into text as its reference, `<image:...>`; such a key in instructions
// or criteria is an image where this model reads only text. Only keys spelled `<...>` are looked
// for: a plain name such as "shot" also occurs in ordinary words ("screenshot").
bool reference_in_text(const std::string& key, const std::vector<choice_question>& questions) {
  if (key.size() < 2 || key.front() != '<' || key.back() != '>') return false;
  for (const auto& question : questions) {
    if (question.goal.find(key) != std::string::npos) return true;
    for (const auto& label : question.labels)
      if (label.find(key) != std::string::npos) return true;
  }
  return false;
}

// The strings of `state`: itself, an object's values or an array's items; false when it holds
// anything else.
bool state_strings(const json_value& state, std::vector<const std::string*>& strings) {
  if (state.is_string()) {
    strings.push_back(&state.text);
    return true;
  }
  if (!state.is_object() && !state.is_array()) return false;
  const size_t count = state.is_object() ? state.members.size() : state.items.size();
  for (size_t i = 0; i < count; ++i) {
    const json_value& value = state.is_object() ? state.members[i].value : state.items[i];
    if (!value.is_string()) return false;
    strings.push_back(&value.text);
  }
  return !strings.empty();
}

// The data URL of the asset state names (422 for a part that is neither PNG nor JPEG, or too
// large; the codec checks the rest as for any data URL).
outcome<std::string> data_url_of(const asset_entry& entry) {
  if (entry.data_base64) {
    std::string url(image_data_url_prefix(entry.mime));
    url += entry.data_base64->text;
    entry.data_base64->text.clear();
    return url;
  }
  const std::string& bytes = entry.part->content;
  if (bytes.size() > max_decoded_image_bytes)
    return unprocessable(std::string(codec_errors::decoded_too_long));
  const auto sniffed = sniff_image_format(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (sniffed == sniffed_format::other_image)
    return unprocessable(std::string(codec_errors::bad_prefix));
  // Unknown bytes go as PNG, which the decoder then refuses as invalid image data.
  return make_image_data_url(sniffed == sniffed_format::jpeg ? image_mime::jpeg : image_mime::png,
                             bytes);
}

}  // namespace

bool state_refers_to_assets(const json_value& state) {
  const bool data_url_form = state.is_object() && state.members.size() == 1 &&
                             state.members[0].key == "image" &&
                             state.members[0].value.is_string() &&
                             state.members[0].value.text.starts_with("data:");
  return !data_url_form;
}

outcome<std::string> resolve_asset_image(const json_value& state, json_value& assets,
                                         const std::vector<choice_question>& questions,
                                         const multipart_form* form) {
  if (!assets.is_object() || assets.members.empty())
    return unprocessable("assets must map names to image entries");
  // One image is all a request may use; the cap keeps the checks below (each asset against all
  // question text, each state name against all assets) small whatever the body holds.
  if (assets.members.size() > max_assets)
    return unprocessable("assets may hold at most " + std::to_string(max_assets) + " entries");
  std::vector<asset_entry> entries;
  for (auto& member : assets.members) {
    auto entry = check_entry(member, form);
    if (!entry) return entry.error();
    entries.push_back(*entry);
  }
  // The SDK's rule: each part (but `request`) is claimed by exactly one asset.
  if (form) {
    for (const auto& part : form->parts) {
      if (part.name == request_part_name) continue;
      const auto claims = std::count_if(entries.begin(), entries.end(),
                                        [&](const asset_entry& e) { return e.part == &part; });
      if (claims == 0) return unprocessable("a part is claimed by no asset");
      if (claims > 1) return unprocessable("a part is claimed by more than one asset");
    }
  }
  for (const auto& entry : entries)
    if (reference_in_text(*entry.name, questions))
      return unprocessable("instructions and criteria must not contain an image reference");

  std::vector<const std::string*> named;
  if (!state_strings(state, named))
    return unprocessable("state must name one image asset");
  auto find_entry = [&](const std::string& name) -> const asset_entry* {
    for (const auto& entry : entries)
      if (*entry.name == name) return &entry;
    return nullptr;
  };
  const asset_entry* image = nullptr;
  if (named.size() == 1) {
    image = find_entry(*named[0]);
    if (!image) return unprocessable("state names an asset that assets does not hold");
  } else {
    size_t images = 0;
    for (const std::string* name : named) {
      if (const asset_entry* found = find_entry(*name))
        image = found, ++images;
      else
        return unprocessable("state must hold one image and no text");
    }
    if (images > 1) return unprocessable("state must hold exactly one image");
  }
  if (entries.size() > 1) return unprocessable("assets holds an asset that state does not use");
  return data_url_of(*image);
}

outcome<bool> check_no_unclaimed_parts(const multipart_form* form) {
  if (form)
    for (const auto& part : form->parts)
      if (part.name != request_part_name) return unprocessable("a part is claimed by no asset");
  return true;
}

}  // namespace cua_s1
