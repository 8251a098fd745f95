// Upload of the decoded picture and its resize on the GPU (taps made on the host once per size).
#include "gpu/picture_resize.hpp"

#include <stdexcept>

#include "kernels/resize.hpp"
#include "prep/bicubic_resize.hpp"

namespace cua_s1::gpu {

picture_resizer::axis_taps picture_resizer::upload_axis(const forward_context& ctx,
                                                        uint32_t in_size, uint32_t out_size) {
  if (in_size == out_size) return {};
  const resample_axis axis = make_resample_axis(in_size, out_size);
  axis_taps taps{device_buffer<uint32_t>(axis.first.size(), ctx.stream),
                 device_buffer<uint32_t>(axis.count.size(), ctx.stream),
                 device_buffer<int16_t>(axis.coeffs.size(), ctx.stream), axis.taps,
                 axis.precision};
  ctx.upload(axis.first.data(), axis.first.size(), taps.first.get());
  ctx.upload(axis.count.data(), axis.count.size(), taps.count.get());
  ctx.upload(axis.coeffs.data(), axis.coeffs.size(), taps.coeffs.get());
  return taps;
}

picture_resizer::picture_resizer(const forward_context& ctx, uint32_t from_w, uint32_t from_h,
                                 uint32_t to_w, uint32_t to_h)
    : from_w_(from_w), from_h_(from_h), to_w_(to_w), to_h_(to_h) {
  if (from_w == 0 || from_h == 0 || to_w == 0 || to_h == 0)
    throw std::invalid_argument("picture_resizer: an empty picture");
  horizontal_ = upload_axis(ctx, from_w, to_w);
  vertical_ = upload_axis(ctx, from_h, to_h);
}

const uint8_t* picture_resizer::resize(const forward_context& ctx, const uint8_t* source,
                                       device_buffer<uint8_t>& storage) const {
  const cudaStream_t s = ctx.stream;
  if (from_w_ == to_w_ && from_h_ == to_h_) return source;
  device_buffer<uint8_t> between;
  const uint8_t* rows = source;
  if (from_w_ != to_w_) {
    device_buffer<uint8_t>& target = from_h_ == to_h_ ? storage : between;
    target = device_buffer<uint8_t>(size_t(to_w_) * from_h_ * 3, s);
    kernels::resample_horizontal(source, from_w_, from_h_, target.get(), to_w_,
                                 {horizontal_.first.get(), horizontal_.count.get(),
                                  horizontal_.coeffs.get(), horizontal_.taps,
                                  horizontal_.precision},
                                 s);
    if (from_h_ == to_h_) return storage.get();
    rows = between.get();
  }
  storage = device_buffer<uint8_t>(size_t(to_w_) * to_h_ * 3, s);
  kernels::resample_vertical(rows, to_w_ * 3, storage.get(), to_h_,
                             {vertical_.first.get(), vertical_.count.get(), vertical_.coeffs.get(),
                              vertical_.taps, vertical_.precision},
                             s);
  return storage.get();
}

device_buffer<uint8_t> upload_resized_picture(const forward_context& ctx, const rgb_image& picture,
                                              uint32_t width, uint32_t height) {
  if (picture.width == 0 || picture.height == 0 || width == 0 || height == 0 ||
      picture.pixels.size() != size_t(picture.width) * picture.height * 3)
    throw std::invalid_argument("upload_resized_picture: an empty or inconsistent picture");
  device_buffer<uint8_t> source(picture.pixels.size(), ctx.stream);
  ctx.upload_picture(picture.pixels.data(), picture.pixels.size(), source.get());
  const picture_resizer resizer(ctx, picture.width, picture.height, width, height);
  device_buffer<uint8_t> resized;
  const uint8_t* out = resizer.resize(ctx, source.get(), resized);
  return out == source.get() ? std::move(source) : std::move(resized);
}

}  // namespace cua_s1::gpu
