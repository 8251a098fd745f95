// Stream capture of enqueue_encoder into per-size graphs, with LRU eviction.
#include "gpu/vision_graphs.hpp"

#include "common/json_log.hpp"

namespace cua_s1::gpu {

vision_graphs::~vision_graphs() { clear(); }

void vision_graphs::clear() {
  for (auto& [size, e] : entries_)
    if (e->exec) cudaGraphExecDestroy(e->exec);  // freed on completion if still running
  entries_.clear();
  ages_.clear();
  eager_features_ = device_buffer<float>();
}

void vision_graphs::evict_oldest() {
  const key oldest = ages_.back();
  ages_.pop_back();
  auto found = entries_.find(oldest);
  if (found->second->exec) cudaGraphExecDestroy(found->second->exec);
  entries_.erase(found);
}

bool vision_graphs::capture(const forward_context& ctx, const vision_config& config,
                            const device_vision& weights, entry& e) {
  cudaGraph_t graph = nullptr;
  try {
    check_cuda(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    try {
      enqueue_encoder(ctx, config, weights, e.plan, e.input.get(), e.features.get());
    } catch (...) {
      cudaStreamEndCapture(ctx.stream, &graph);  // ends the (invalidated) capture
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check_cuda(cudaStreamEndCapture(ctx.stream, &graph), "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&e.exec, graph, 0), "cudaGraphInstantiate");
    cudaGraphDestroy(graph);
    return true;
  } catch (const cuda_error& error) {
    if (error.sticky()) throw;
    cudaGetLastError();  // a failed capture leaves a non-sticky error behind
    log_event(log_level::warning, "cuda_graph_capture_failed",
              {{"graph", "vision"}, {"grid_h", int64_t(e.plan.grid.h)}, {"grid_w", int64_t(e.plan.grid.w)},
               {"detail", std::string_view(error.what())}, {"fallback", "eager"}});
    return false;
  }
}

const float* vision_graphs::encode(const forward_context& ctx, const vision_config& config,
                                   const device_vision& weights, const prepared_image& image) {
  if (capacity_ == 0 || ctx.probing()) {
    eager_features_ = encode_image(ctx, config, weights, image);
    return eager_features_.get();
  }
  eager_features_ = device_buffer<float>();
  const bool values = !image.pixel_values.empty();
  const key size{image.grid.h, image.grid.w, values ? 0 : image.picture.width,
                 values ? 0 : image.picture.height};
  auto found = entries_.find(size);
  entry* e = nullptr;
  if (found != entries_.end()) {
    e = found->second.get();
    if (!e->plan.fits(image)) throw std::logic_error("vision_graphs: a plan of another image");
    ages_.erase(e->age);
  } else {
    if (entries_.size() >= capacity_) evict_oldest();
    auto fresh = std::make_unique<entry>();
    fresh->plan = make_image_plan(ctx, config, image);  // validates the image
    fresh->input = device_buffer<uint8_t>(fresh->plan.input_bytes(config), ctx.stream);
    fresh->features = device_buffer<float>(
        size_t(image_feature_rows(config, image.grid) * config.out_hidden_size), ctx.stream);
    e = entries_.emplace(size, std::move(fresh)).first->second.get();
  }
  ages_.push_front(size);
  e->age = ages_.begin();

  upload_image(ctx, e->plan, image, e->input.get());
  if (!e->exec && !e->eager) e->eager = !capture(ctx, config, weights, *e);
  if (e->eager)
    enqueue_encoder(ctx, config, weights, e->plan, e->input.get(), e->features.get());
  else
    check_cuda(cudaGraphLaunch(e->exec, ctx.stream), "cudaGraphLaunch");
  return e->features.get();
}

}  // namespace cua_s1::gpu
