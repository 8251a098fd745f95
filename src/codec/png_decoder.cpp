// libdeflate inflates the image data of ordinary PNGs in one call and png_unfilter.cpp reverses
// the row filters; interlaced or irregular streams go to libspng, which decodes a sanitised copy of the PNG
// (IHDR, IDAT run, IEND) to raw samples. The mode conversions below are Pillow's: "1" -> 0/255,
// L;2 x85, L;4 x17, I;16 clamped to 255, 16-bit colour and LA;16 keep the high byte, palette
// entries beyond PLTE are black, alpha and tRNS are ignored (no compositing).
#include "codec/png_decoder.hpp"

#include <libdeflate.h>
#include <spng.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec_errors.hpp"
#include "codec/crc32.hpp"
#include "codec/helper_threads.hpp"
#include "codec/png_decoder_testing.hpp"
#include "codec/png_unfilter.hpp"

namespace cua_s1 {
namespace {

failure invalid() { return unprocessable(std::string(codec_errors::invalid_data)); }

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

// Appends one chunk whose payload is the concatenation of `pieces`, with a correct CRC: libspng
// then verifies the zlib Adler-32 (as Pillow's zlib does) while the file's own IDAT CRCs, which
// Pillow never checks, play no part.
void put_chunk(std::vector<uint8_t>& out, const char* cid,
               std::initializer_list<std::span<const uint8_t>> pieces) {
  size_t size = 0;
  for (const auto& piece : pieces) size += piece.size();
  put_be32(out, static_cast<uint32_t>(size));
  const size_t cid_at = out.size();
  out.insert(out.end(), cid, cid + 4);
  for (const auto& piece : pieces) out.insert(out.end(), piece.begin(), piece.end());
  put_be32(out, crc32_update(0, out.data() + cid_at, out.size() - cid_at));
}

// The PNG libspng sees: only what Pillow's zip decoder depends on (size, sample format,
// interlace, the concatenated zlib data). The palette is a dummy: lookups are done here.
std::vector<uint8_t> build_clean_png(std::span<const uint8_t> file, const png_stream_state& st,
                                     uint32_t width, uint32_t height,
                                     std::span<const png_data_segment> segments) {
  size_t data_size = 0;
  for (const auto& seg : segments) data_size += seg.size;
  std::vector<uint8_t> out;
  out.reserve(8 + 25 + 12 + 768 + 12 + data_size + 12);
  static constexpr uint8_t magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  out.insert(out.end(), magic, magic + 8);
  uint8_t ihdr[13];
  for (int i = 0; i < 4; ++i) {
    ihdr[i] = static_cast<uint8_t>(width >> (24 - 8 * i));
    ihdr[4 + i] = static_cast<uint8_t>(height >> (24 - 8 * i));
  }
  ihdr[8] = st.bit_depth;
  ihdr[9] = st.color_type;
  ihdr[10] = 0;  // Pillow ignores the compression method byte
  ihdr[11] = 0;
  ihdr[12] = st.interlaced ? 1 : 0;  // Pillow treats any non-zero value as Adam7
  put_chunk(out, "IHDR", {std::span<const uint8_t>(ihdr)});
  if (st.color_type == 3) {
    const std::vector<uint8_t> dummy(3u << st.bit_depth, 0);
    put_chunk(out, "PLTE", {std::span<const uint8_t>(dummy)});
  }
  // One IDAT holding the whole run (<= 4 MiB, so the length fits).
  put_be32(out, static_cast<uint32_t>(data_size));
  const size_t cid_at = out.size();
  out.insert(out.end(), {'I', 'D', 'A', 'T'});
  for (const auto& seg : segments) {
    const auto* begin = file.data() + seg.offset;
    out.insert(out.end(), begin, begin + seg.size);
  }
  put_be32(out, crc32_update(0, out.data() + cid_at, out.size() - cid_at));
  put_chunk(out, "IEND", {});
  return out;
}

struct spng_deleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};

// Decodes the clean PNG to raw big-endian samples (SPNG_FMT_RAW) into `raw`.
bool spng_decode_raw(const std::vector<uint8_t>& png, picture_bytes& raw) {
  std::unique_ptr<spng_ctx, spng_deleter> ctx(spng_ctx_new(0));
  if (!ctx) return false;
  if (spng_set_crc_action(ctx.get(), SPNG_CRC_ERROR, SPNG_CRC_DISCARD) != 0) return false;
  if (spng_set_png_buffer(ctx.get(), png.data(), png.size()) != 0) return false;
  size_t size = 0;
  if (spng_decoded_image_size(ctx.get(), SPNG_FMT_RAW, &size) != 0) return false;
  raw.assign(size, 0);  // interlaced sub-byte rows are OR-ed into the buffer: it must start zeroed
  return spng_decode_image(ctx.get(), raw.data(), raw.size(), SPNG_FMT_RAW, 0) == 0;
}

struct decompressor_deleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// The fast path: the IDAT run inflated by libdeflate in one call and unfiltered, for a
// non-interlaced image whose data is exactly one zlib stream (Adler-32 checked) of exactly
// height * (1 + row bytes) bytes. False when that does not hold; libspng then decides.
bool inflate_raw(std::span<const uint8_t> file, const png_stream_state& st, uint32_t w, uint32_t h,
                 std::span<const png_data_segment> segments, picture_bytes& raw) {
  if (st.interlaced || !supported_mode(st.bit_depth, st.color_type)) return false;
  static constexpr int channels[7] = {1, 0, 3, 1, 2, 0, 4};
  const size_t bits = size_t(channels[st.color_type]) * st.bit_depth;
  const size_t row_bytes = (size_t{w} * bits + 7) / 8;
  const size_t bpp = std::max<size_t>(1, bits / 8);
  std::vector<uint8_t> joined;
  std::span<const uint8_t> stream;
  if (segments.size() == 1) {
    stream = file.subspan(segments[0].offset, segments[0].size);
  } else {
    for (const auto& seg : segments)
      joined.insert(joined.end(), file.data() + seg.offset, file.data() + seg.offset + seg.size);
    stream = joined;
  }
  // The unfilter's helpers get up while the rows inflate (~0.5 ms at 1280x720).
  wake_helpers_ahead(png_unfilter_helpers(size_t{h} * row_bytes), std::chrono::milliseconds(2));
  thread_local std::unique_ptr<libdeflate_decompressor, decompressor_deleter> inflater(
      libdeflate_alloc_decompressor());
  if (!inflater) return false;
  // The inflated rows go to a buffer each decoding thread keeps (fresh memory would cost a page
  // fault every 4 KiB, as much as the inflating).
  const size_t filtered_size = size_t{h} * (row_bytes + 1);
  thread_local std::vector<uint8_t> filtered;
  if (filtered.size() < filtered_size) filtered.resize(filtered_size);
  size_t used = 0, produced = 0;
  if (libdeflate_zlib_decompress_ex(inflater.get(), stream.data(), stream.size(), filtered.data(),
                                    filtered_size, &used, &produced) != LIBDEFLATE_SUCCESS ||
      used != stream.size() || produced != filtered_size)
    return false;
  const size_t raw_size = size_t{h} * row_bytes;
  raw.resize(raw_size);
  return unfilter_png_rows(filtered.data(), row_bytes, h, bpp, raw.data(),
                           png_unfilter_helpers(raw_size));
}

using palette_table = std::array<uint8_t, 256 * 3>;

// Expands packed samples of `bits` (1, 2, 4, 8) per pixel through a 256-entry RGB table.
void expand_indexed(const uint8_t* raw, size_t row_bytes, uint32_t w, uint32_t h, int bits,
                    const palette_table& table, uint8_t* out) {
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  for (uint32_t y = 0; y < h; ++y) {
    const uint8_t* row = raw + y * row_bytes;
    uint8_t* dst = out + size_t{y} * w * 3;
    if (bits == 8) {
      for (uint32_t x = 0; x < w; ++x) std::memcpy(dst + 3 * x, &table[row[x] * 3], 3);
      continue;
    }
    for (uint32_t x = 0; x < w; ++x) {
      const int shift = 8 - bits * (1 + static_cast<int>(x % per_byte));
      const unsigned v = (row[x / per_byte] >> shift) & mask;
      std::memcpy(dst + 3 * x, &table[v * 3], 3);
    }
  }
}

palette_table gray_table(int bits) {
  palette_table t{};
  const int scale = bits == 1 ? 255 : bits == 2 ? 85 : bits == 4 ? 17 : 1;
  for (int v = 0; v < 256; ++v) {
    const auto g = static_cast<uint8_t>(v * scale > 255 ? 255 : v * scale);
    t[v * 3] = t[v * 3 + 1] = t[v * 3 + 2] = g;
  }
  return t;
}

// Pillow's P -> RGB: PLTE gives len/3 entries, the rest of the 256 stay (0, 0, 0).
palette_table palette_lookup(const png_stream_state& st) {
  palette_table t{};
  if (st.has_palette) {
    const size_t entries = st.palette.size() / 3;
    std::memcpy(t.data(), st.palette.data(), entries * 3);
  }
  return t;
}

// Converts raw samples of colour type / bit depth to RGB8, the way Pillow's unpacker and
// convert("RGB") do.
void raw_to_rgb(const picture_bytes& raw, const png_stream_state& st, uint32_t w,
                uint32_t h, uint8_t* out) {
  const int bd = st.bit_depth;
  const size_t pixels = size_t{w} * h;
  const uint8_t* s = raw.data();
  switch (st.color_type) {
    case 0:
      if (bd == 16) {
        for (size_t i = 0; i < pixels; ++i) {
          const unsigned v = (unsigned{s[2 * i]} << 8) | s[2 * i + 1];
          out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = static_cast<uint8_t>(v > 255 ? 255 : v);
        }
      } else if (bd == 8) {
        for (size_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = s[i];
      } else {
        expand_indexed(s, (size_t{w} * bd + 7) / 8, w, h, bd, gray_table(bd), out);
      }
      return;
    case 2:
      if (bd == 8) {
        std::memcpy(out, s, pixels * 3);
      } else {
        for (size_t i = 0; i < pixels * 3; ++i) out[i] = s[2 * i];
      }
      return;
    case 3:
      expand_indexed(s, (size_t{w} * bd + 7) / 8, w, h, bd, palette_lookup(st), out);
      return;
    case 4: {
      const size_t stride = bd == 8 ? 2 : 4;
      for (size_t i = 0; i < pixels; ++i) {
        out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = s[stride * i];
      }
      return;
    }
    case 6:
      if (bd == 8) {
        for (size_t i = 0; i < pixels; ++i) std::memcpy(out + 3 * i, s + 4 * i, 3);
      } else {
        for (size_t i = 0; i < pixels; ++i) {
          out[3 * i] = s[8 * i];
          out[3 * i + 1] = s[8 * i + 2];
          out[3 * i + 2] = s[8 * i + 4];
        }
      }
      return;
    default: return;
  }
}

// decode_png_pixels by libdeflate where it can and libspng elsewhere (`only` unset), or by one
// of them alone.
outcome<rgb_image> decode_by(std::span<const uint8_t> file, const png_header& header,
                             std::optional<png_inflate> only) {
  const png_stream_state& st = header.state;
  // Pillow's putpalette: "invalid palette size" for more than 256 entries.
  if (st.color_type == 3 && st.has_palette && st.palette.size() / 3 > 256) return invalid();
  png_header work = header;  // the load path keeps mutating the APNG sequence state
  const auto data = collect_png_image_data(file, work);
  if (!data || data->segments.empty()) return invalid();
  if (!check_png_trailing_chunks(file, data->end, work)) return invalid();

  const uint32_t w = st.has_bbox ? st.bbox_w : st.width;
  const uint32_t h = st.has_bbox ? st.bbox_h : st.height;
  if (w == 0 || h == 0) return invalid();
  picture_bytes raw;  // picture memory: for RGB8 these bytes become the picture
  if (only == png_inflate::libspng_only || !inflate_raw(file, st, w, h, data->segments, raw)) {
    if (only == png_inflate::libdeflate_only) return invalid();
    const std::vector<uint8_t> clean = build_clean_png(file, st, w, h, data->segments);
    if (!spng_decode_raw(clean, raw)) return invalid();
  }

  rgb_image image;
  image.width = st.width;
  image.height = st.height;
  if (!st.has_bbox || (w == st.width && h == st.height)) {
    if (st.color_type == 2 && st.bit_depth == 8) {
      image.pixels = std::move(raw);  // already RGB8, row-major, unpadded
    } else {
      image.pixels.resize(size_t{w} * h * 3);
      raw_to_rgb(raw, st, w, h, image.pixels.data());
    }
    return image;
  }
  // An fcTL region smaller than the canvas: Pillow decodes into that region of a zeroed image.
  std::vector<uint8_t> region(size_t{w} * h * 3);
  raw_to_rgb(raw, st, w, h, region.data());
  uint8_t zero[3] = {0, 0, 0};
  if (st.color_type == 3) std::memcpy(zero, palette_lookup(st).data(), 3);
  image.pixels.resize(size_t{st.width} * st.height * 3);
  for (size_t i = 0; i < size_t{st.width} * st.height; ++i) std::memcpy(&image.pixels[3 * i], zero, 3);
  for (uint32_t y = 0; y < h; ++y) {
    std::memcpy(&image.pixels[(size_t{st.bbox_y + y} * st.width + st.bbox_x) * 3],
                &region[size_t{y} * w * 3], size_t{w} * 3);
  }
  return image;
}

}  // namespace

outcome<rgb_image> decode_png_pixels(std::span<const uint8_t> file, const png_header& header) {
  return decode_by(file, header, std::nullopt);
}

outcome<rgb_image> decode_png_pixels(std::span<const uint8_t> file, const png_header& header,
                                     png_inflate only) {
  return decode_by(file, header, only);
}

}  // namespace cua_s1
