// Upload of the decoded picture and its resize on the GPU (taps made on the host).
#include "gpu/picture_resize.hpp"

#include <stdexcept>

#include "kernels/resize.hpp"
#include "prep/bicubic_resize.hpp"

namespace cua_s1::gpu {
namespace {

// One axis's taps uploaded for the kernels.
struct device_taps {
  device_buffer<uint32_t> first, count;
  device_buffer<int16_t> coeffs;
  kernels::resample_taps view;
};

device_taps upload_taps(const forward_context& ctx, const resample_axis& axis) {
  device_taps taps{device_buffer<uint32_t>(axis.first.size(), ctx.stream),
                   device_buffer<uint32_t>(axis.count.size(), ctx.stream),
                   device_buffer<int16_t>(axis.coeffs.size(), ctx.stream),
                   {}};
  ctx.upload(axis.first.data(), axis.first.size(), taps.first.get());
  ctx.upload(axis.count.data(), axis.count.size(), taps.count.get());
  ctx.upload(axis.coeffs.data(), axis.coeffs.size(), taps.coeffs.get());
  taps.view = {taps.first.get(), taps.count.get(), taps.coeffs.get(), axis.taps, axis.precision};
  return taps;
}

}  // namespace

device_buffer<uint8_t> upload_resized_picture(const forward_context& ctx, const rgb_image& picture,
                                              uint32_t width, uint32_t height) {
  const cudaStream_t s = ctx.stream;
  if (picture.width == 0 || picture.height == 0 || width == 0 || height == 0 ||
      picture.pixels.size() != size_t(picture.width) * picture.height * 3)
    throw std::invalid_argument("upload_resized_picture: an empty or inconsistent picture");
  device_buffer<uint8_t> source(picture.pixels.size(), s);
  ctx.upload(picture.pixels.data(), picture.pixels.size(), source.get());
  if (width == picture.width && height == picture.height) return source;

  device_buffer<uint8_t> between;
  if (width != picture.width) {
    const device_taps taps = upload_taps(ctx, make_resample_axis(picture.width, width));
    between = device_buffer<uint8_t>(size_t(width) * picture.height * 3, s);
    kernels::resample_horizontal(source.get(), picture.width, picture.height, between.get(), width,
                                 taps.view, s);
    if (height == picture.height) return between;
  }
  const uint8_t* rows = between.get() ? between.get() : source.get();
  const device_taps taps = upload_taps(ctx, make_resample_axis(picture.height, height));
  device_buffer<uint8_t> resized(size_t(width) * height * 3, s);
  kernels::resample_vertical(rows, width * 3, resized.get(), height, taps.view, s);
  return resized;
}

}  // namespace cua_s1::gpu
