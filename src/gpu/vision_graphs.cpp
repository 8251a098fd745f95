// The vision encoder captured into per-size graphs (cuda_graph), kept in an LRU cache.
#include "gpu/vision_graphs.hpp"

#include <stdexcept>

#include "common/json_log.hpp"

namespace cua_s1::gpu {

void vision_graphs::clear() {
  entries_.clear();
  eager_features_ = device_buffer<float>();
}

const float* vision_graphs::encode(const forward_context& ctx, const vision_config& config,
                                   const device_vision& weights, const prepared_image& image) {
  if (entries_.capacity() == 0) {
    eager_features_ = encode_image(ctx, config, weights, image);
    return eager_features_.get();
  }
  eager_features_ = device_buffer<float>();
  const bool values = !image.pixel_values.empty();
  const key size{image.grid.h, image.grid.w, values ? 0 : image.picture.width,
                 values ? 0 : image.picture.height};
  entry* e = entries_.find(size);
  if (e) {
    if (!e->plan.fits(image)) throw std::logic_error("vision_graphs: a plan of another image");
  } else {
    e = &entries_.emplace(size, [&] {
      entry fresh;
      fresh.plan = make_image_plan(ctx, config, image);  // validates the image
      fresh.input = device_buffer<uint8_t>(fresh.plan.input_bytes(config), ctx.stream);
      fresh.features = device_buffer<float>(
          size_t(image_feature_rows(config, image.grid) * config.out_hidden_size), ctx.stream);
      return fresh;
    });
  }

  upload_image(ctx, e->plan, image, e->input.get());
  if (!e->graph && !e->eager) {
    outcome<cuda_graph> captured = cuda_graph::capture(ctx.stream, [&] {
      enqueue_encoder(ctx, config, weights, e->plan, e->input.get(), e->features.get());
    });
    if (captured) {
      e->graph = std::move(*captured);
    } else {
      e->eager = true;
      log_event(log_level::warning, "cuda_graph_capture_failed",
                {{"graph", "vision"}, {"grid_h", int64_t(e->plan.grid.h)},
                 {"grid_w", int64_t(e->plan.grid.w)},
                 {"detail", std::string_view(captured.error().detail)}, {"fallback", "eager"}});
    }
  }
  if (e->eager)
    enqueue_encoder(ctx, config, weights, e->plan, e->input.get(), e->features.get());
  else
    e->graph.launch(ctx.stream);
  return e->features.get();
}

}  // namespace cua_s1::gpu
