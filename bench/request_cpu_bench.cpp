// Per-stage CPU time of one request outside the model, on the server's GPU path (the decoded
// picture goes to the backend): median and p90 milliseconds over N runs, one line per stage.
//   request_cpu_bench MODEL_DIR REQUEST.json [--iterations N] [--pause-ms N] [--spin]
#include <libdeflate.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/request_validation.hpp"
#include "api/strict_json.hpp"
#include "codec/data_url.hpp"
#include "codec/image_decoder.hpp"
#include "codec/png_decoder.hpp"
#include "codec/png_header.hpp"
#include "codec/png_unfilter.hpp"
#include "prep/request_preparer.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct timing {
  double p50 = 0, p90 = 0;
};

int pause_ms = 0;  // --pause-ms: idle time before each timed run, as between a client's requests
bool spin = false;  // --spin: the pause busy-waits on the timing thread instead of sleeping

// The idle time before a run: asleep, or spinning (the core kept busy, as a polling thread would).
void pause_before_run() {
  if (pause_ms <= 0) return;
  if (!spin) return std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  const auto until = clock_type::now() + std::chrono::milliseconds(pause_ms);
  while (clock_type::now() < until) {
  }
}

template <class F>
timing time_ms(int iterations, F&& body) {
  std::vector<double> samples;
  for (int i = 0; i < iterations; ++i) {
    pause_before_run();
    const auto start = clock_type::now();
    body();
    samples.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples[samples.size() * 9 / 10]};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void row(const char* stage, timing t) { std::printf("| %-34s | %7.3f | %7.3f |\n", stage, t.p50, t.p90); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: request_cpu_bench MODEL_DIR REQUEST.json [--iterations N] [--pause-ms N] [--spin]\n");
    return 2;
  }
  int iterations = 300;
  for (int i = 3; i < argc; ++i)
    if (std::string(argv[i]) == "--spin") spin = true;
    else if (i + 1 < argc && std::string(argv[i]) == "--iterations") iterations = std::max(1, std::stoi(argv[i + 1]));
    else if (i + 1 < argc && std::string(argv[i]) == "--pause-ms") pause_ms = std::max(0, std::stoi(argv[i + 1]));
  auto preparer = cua_s1::request_preparer::load(argv[1]);
  if (!preparer) {
    std::fprintf(stderr, "%s\n", preparer.error().detail.c_str());
    return 1;
  }
  const std::string body = read_file(argv[2]);
  auto request = preparer->parse(body);
  if (!request) {
    std::fprintf(stderr, "%s\n", request.error().detail.c_str());
    return 1;
  }
  auto payload = cua_s1::parse_image_data_url(request->image_data_url);
  auto header = cua_s1::read_png_header(payload->bytes);
  if (!header) {
    std::fprintf(stderr, "not a PNG request\n");
    return 1;
  }
  const auto& st = header->state;
  std::printf("%s: %zu bytes, PNG %zu bytes, %ux%u colour type %d, %d iterations\n\n", argv[2],
              body.size(), payload->bytes.size(), st.width, st.height, st.color_type, iterations);
  std::printf("| stage | p50 ms | p90 ms |\n|---|---|---|\n");

  row("json parse (utf8 + strict)", time_ms(iterations, [&] { (void)cua_s1::parse_strict_json(body); }));
  row("json parse + validate", time_ms(iterations, [&] { (void)preparer->parse(body); }));
  row("data url + base64", time_ms(iterations, [&] {
        (void)cua_s1::parse_image_data_url(request->image_data_url);
      }));
  row("png header + data walk", time_ms(iterations, [&] {
        auto h = cua_s1::read_png_header(payload->bytes);
        (void)cua_s1::collect_png_image_data(payload->bytes, *h);
      }));

  // The inflate and unfilter steps alone, into buffers kept between runs.
  auto work = *header;
  const auto data = cua_s1::collect_png_image_data(payload->bytes, work);
  std::vector<uint8_t> stream;
  for (const auto& seg : data->segments)
    stream.insert(stream.end(), payload->bytes.data() + seg.offset,
                  payload->bytes.data() + seg.offset + seg.size);
  const size_t bpp = st.color_type == 6 ? 4 : st.color_type == 2 ? 3 : 1;
  const size_t row_bytes = size_t{st.width} * bpp;
  std::vector<uint8_t> filtered(size_t{st.height} * (row_bytes + 1)), raw(st.height * row_bytes);
  libdeflate_decompressor* inflater = libdeflate_alloc_decompressor();
  row("inflate (libdeflate)", time_ms(iterations, [&] {
        libdeflate_zlib_decompress(inflater, stream.data(), stream.size(), filtered.data(),
                                   filtered.size(), nullptr);
      }));
  libdeflate_free_decompressor(inflater);
  if (st.bit_depth == 8) {
    for (unsigned helpers : {0u, 1u, 3u, 5u, 7u}) {
      const std::string name = "unfilter, " + std::to_string(helpers) + " helpers";
      row(name.c_str(), time_ms(iterations, [&] {
            cua_s1::unfilter_png_rows(filtered.data(), row_bytes, st.height, bpp, raw.data(), helpers);
          }));
    }
  }
  // What the whole decode adds: the picture's buffer is fresh each time (allocated, zeroed).
  row("fresh picture buffer (alloc + zero)", time_ms(iterations, [&] {
        std::vector<uint8_t> fresh(raw.size());
        asm volatile("" ::"r"(fresh.data()) : "memory");
      }));
  if (st.bit_depth == 8) {
    const unsigned helpers = cua_s1::png_unfilter_helpers(raw.size());
    const std::string name = "unfilter into a fresh buffer, " + std::to_string(helpers) + " helpers";
    row(name.c_str(), time_ms(iterations, [&] {
          std::vector<uint8_t> fresh(raw.size());
          cua_s1::unfilter_png_rows(filtered.data(), row_bytes, st.height, bpp, fresh.data(), helpers);
        }));
  }
  row("png decode (whole)", time_ms(iterations, [&] {
        (void)cua_s1::decode_png_pixels(payload->bytes, *header);
      }));
  row("image decode (data url -> rgb)", time_ms(iterations, [&] {
        (void)cua_s1::decode_image_data_url(request->image_data_url);
      }));
  row("prepare (backend pixels)", time_ms(iterations, [&] {
        auto copy = *request;
        (void)preparer->prepare(std::move(copy), cua_s1::pixel_values_on::backend);
      }));
  row("parse + prepare (backend pixels)", time_ms(iterations, [&] {
        auto parsed = preparer->parse(body);
        (void)preparer->prepare(std::move(*parsed), cua_s1::pixel_values_on::backend);
      }));
  return 0;
}
