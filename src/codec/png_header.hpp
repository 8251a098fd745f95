// PNG container walk that mirrors what Pillow 11.3.0 checks when it opens and loads a PNG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace cua_s1 {

// The parser state Pillow's PngStream keeps across chunk handlers.
struct png_stream_state {
  uint32_t width = 0;  // from the last IHDR
  uint32_t height = 0;
  bool has_mode = false;  // a supported (bit depth, colour type) pair was seen
  uint8_t bit_depth = 0;  // of the last supported pair
  uint8_t color_type = 0;
  bool interlaced = false;  // sticky, any non-zero interlace byte
  bool has_palette = false;
  std::span<const uint8_t> palette;  // the last PLTE seen while the mode was palette
  std::optional<uint32_t> n_frames;  // acTL
  std::optional<uint32_t> seq_num;   // APNG sequence number
  bool has_bbox = false;             // fcTL region
  uint32_t bbox_x = 0, bbox_y = 0, bbox_w = 0, bbox_h = 0;
  bool default_image = false;  // IDAT after acTL without fcTL: an extra, hidden frame
  uint64_t text_memory = 0;    // characters of text chunks so far (Pillow's check_text_memory)
};

struct png_header {
  png_stream_state state;
  uint32_t frames = 1;  // what Pillow reports as n_frames
  // Offset of the length field of the chunk that starts the image data (IDAT or fdAT), if any.
  std::optional<size_t> first_data_chunk;
};

// Pillow's Image.open for PNG: walks every chunk before the image data, running the same
// checks (chunk names, CRCs, truncation, the per-chunk handler checks). nullopt: not a PNG
// that Pillow can open (magic, header or chunk error).
std::optional<png_header> read_png_header(std::span<const uint8_t> file);

// Pillow's _MODES table: the (bit depth, colour type) pairs it can decode (those the PNG
// specification allows).
bool supported_mode(uint8_t bit_depth, uint8_t color_type);

// A piece of the concatenated zlib stream (offset and size into the file).
struct png_data_segment {
  size_t offset = 0;
  size_t size = 0;
};

struct png_image_data {
  std::vector<png_data_segment> segments;
  size_t end = 0;  // offset just past the last data chunk's data
};

// The IDAT/fdAT run that Pillow's load_read would feed to zlib, clipped at end of file.
// nullopt when a chunk handler in the run fails (fdAT sequence error).
std::optional<png_image_data> collect_png_image_data(std::span<const uint8_t> file,
                                                     png_header& header);

// Pillow's load_end: the chunks after the image data are parsed (no CRC check) until IEND or an
// unreadable chunk header; false when a handler or a truncated chunk would raise.
bool check_png_trailing_chunks(std::span<const uint8_t> file, size_t after_data,
                               png_header& header);

}  // namespace cua_s1
