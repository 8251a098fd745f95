// NFC: canonical decomposition, canonical ordering, canonical composition (UAX #15).
#include "prep/nfc.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "prep/unicode_tables.hpp"
#include "common/utf8.hpp"

namespace cua_s1 {
namespace {

constexpr uint32_t s_base = 0xAC00, l_base = 0x1100, v_base = 0x1161, t_base = 0x11A7;
constexpr uint32_t l_count = 19, v_count = 21, t_count = 28, n_count = v_count * t_count;
constexpr uint32_t s_count = l_count * n_count;

uint8_t ccc_of(uint32_t cp) {
  if (cp == utf8::invalid) return 0;
  const auto* end = unicode::k_ccc + unicode::k_ccc_size;
  const auto* it =
      std::lower_bound(unicode::k_ccc, end, cp,
                       [](const unicode::ccc_entry& e, uint32_t c) { return e.code_point < c; });
  return it != end && it->code_point == cp ? it->ccc : 0;
}

// Appends the full canonical decomposition of cp.
void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= s_base && cp < s_base + s_count) {
    const uint32_t s = cp - s_base;
    out.push_back(l_base + s / n_count);
    out.push_back(v_base + (s % n_count) / t_count);
    if (s % t_count != 0) out.push_back(t_base + s % t_count);
    return;
  }
  const auto* end = unicode::k_decompositions + unicode::k_decompositions_size;
  const auto* it = std::lower_bound(
      unicode::k_decompositions, end, cp,
      [](const unicode::decomposition_entry& e, uint32_t c) { return e.code_point < c; });
  if (it != end && it->code_point == cp) {
    out.insert(out.end(), unicode::k_decomposition_data + it->offset,
               unicode::k_decomposition_data + it->offset + it->length);
  } else {
    out.push_back(cp);
  }
}

// The primary composite of (first, second), or 0 when there is none.
uint32_t compose(uint32_t first, uint32_t second) {
  if (first >= l_base && first < l_base + l_count && second >= v_base &&
      second < v_base + v_count) {
    return s_base + ((first - l_base) * v_count + (second - v_base)) * t_count;
  }
  if (first >= s_base && first < s_base + s_count && (first - s_base) % t_count == 0 &&
      second > t_base && second < t_base + t_count) {
    return first + (second - t_base);
  }
  const auto* end = unicode::k_compositions + unicode::k_compositions_size;
  const auto* it = std::lower_bound(
      unicode::k_compositions, end, std::pair{first, second},
      [](const unicode::composition_entry& e, const std::pair<uint32_t, uint32_t>& key) {
        return e.first < key.first || (e.first == key.first && e.second < key.second);
      });
  return it != end && it->first == first && it->second == second ? it->composite : 0;
}

}  // namespace

bool nfc_quick_check(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      ++pos;
      continue;
    }
    const auto d = utf8::decode(text, pos);
    if (unicode::flags_of(d.code_point) & unicode::flag_nfc_sensitive) return false;
    pos += d.length;
  }
  return true;
}

std::string nfc_normalize(std::string_view text) {
  // Work on code points; invalid bytes are kept as negative markers (0x80000000 | byte).
  std::vector<uint32_t> points;
  points.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto d = utf8::decode(text, pos);
    if (d.code_point == utf8::invalid) {
      points.push_back(0x80000000u | static_cast<unsigned char>(text[pos]));
    } else {
      decompose(d.code_point, points);
    }
    pos += d.length;
  }
  // Canonical ordering: stable sort of every run of non-starters by combining class.
  for (size_t i = 0; i < points.size();) {
    if (ccc_of(points[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < points.size() && ccc_of(points[j]) != 0) ++j;
    std::stable_sort(points.begin() + i, points.begin() + j,
                     [](uint32_t a, uint32_t b) { return ccc_of(a) < ccc_of(b); });
    i = j;
  }
  // Canonical composition.
  std::vector<uint32_t> out;
  out.reserve(points.size());
  size_t starter = SIZE_MAX;
  int last_ccc = 0;
  for (uint32_t cp : points) {
    const int cc = (cp & 0x80000000u) ? 0 : ccc_of(cp);
    if (starter != SIZE_MAX && !(cp & 0x80000000u)) {
      const bool adjacent = out.size() == starter + 1;
      if (adjacent || last_ccc < cc) {
        if (const uint32_t composite = compose(out[starter], cp)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cc == 0) {
      starter = (cp & 0x80000000u) ? SIZE_MAX : out.size();
      last_ccc = 0;
    } else {
      last_ccc = cc;
    }
    out.push_back(cp);
  }
  std::string result;
  result.reserve(text.size());
  for (uint32_t cp : out) {
    if (cp & 0x80000000u) {
      result.push_back(static_cast<char>(cp & 0xFF));
    } else {
      utf8::append(result, cp);
    }
  }
  return result;
}

}  // namespace cua_s1
