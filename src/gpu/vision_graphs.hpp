// CUDA graphs of the vision encoder, one per image size and kind, in a bounded LRU cache. An
// entry keeps its image_plan (geometry and resize taps made once), its input and feature buffers
// and the graph; a request then costs one upload and one launch. A failed capture leaves that
// entry eager (logged once); replay is bit-identical to eager.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <tuple>

#include "common/lru_cache.hpp"
#include "gpu/cuda_graph.hpp"
#include "gpu/vision_forward.hpp"

namespace cua_s1::gpu {

class vision_graphs {
 public:
  // At most `capacity` graphs; 0: every image is encoded eagerly with a fresh plan.
  explicit vision_graphs(size_t capacity) : entries_(capacity) {}

  // `image`'s features [image_feature_rows, out_hidden] on the device, enqueued on ctx.stream;
  // valid for the work enqueued after this and before the next call. Eager (a fresh plan)
  // when the capacity is 0.
  const float* encode(const forward_context& ctx, const vision_config& config,
                      const device_vision& weights, const prepared_image& image);

  // Destroys every graph and buffer (before their stream goes).
  void clear();

 private:
  // Size and kind: grid rows and columns, the picture's width and height (0 for pixel values).
  using key = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;
  struct entry {
    image_plan plan;
    device_buffer<uint8_t> input;
    device_buffer<float> features;
    cuda_graph graph;    // destroyed before the buffers it reads
    bool eager = false;  // its capture failed
  };

  lru_cache<key, entry> entries_;
  device_buffer<float> eager_features_;
};

}  // namespace cua_s1::gpu
