// WebP through libwebp: still images decode straight into RGBA, animations (libwebpdemux's
// animation decoder) give their first frame.
#include <webp/decode.h>
#include <webp/demux.h>

#include <cstring>
#include <memory>
#include <vector>

#include "engine/image/image_formats.h"

namespace vkllm::image::detail {

namespace {

struct AnimDecoderClose {
  void operator()(WebPAnimDecoder* d) const { WebPAnimDecoderDelete(d); }
};

}  // namespace

Image decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  // The header first: the decoders allocate the whole canvas before returning anything.
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(bytes.data(), bytes.size(), &features) != VP8_STATUS_OK) {
    throw ImageError("invalid WebP: unreadable header");
  }
  check_size("WebP", static_cast<uint64_t>(features.width), static_cast<uint64_t>(features.height),
             limits);
  const auto w = static_cast<uint32_t>(features.width), h = static_cast<uint32_t>(features.height);
  std::vector<uint8_t> rgba(size_t{w} * h * 4);
  if (!features.has_animation) {
    if (!WebPDecodeRGBAInto(bytes.data(), bytes.size(), rgba.data(), rgba.size(),
                            static_cast<int>(w * 4))) {
      throw ImageError("invalid WebP: the image data does not decode");
    }
  } else {
    WebPAnimDecoderOptions options;
    if (!WebPAnimDecoderOptionsInit(&options)) throw ImageError("cannot start the WebP decoder");
    options.color_mode = MODE_RGBA;
    options.use_threads = 0;
    const WebPData data{bytes.data(), bytes.size()};
    const std::unique_ptr<WebPAnimDecoder, AnimDecoderClose> anim(
        WebPAnimDecoderNew(&data, &options));
    WebPAnimInfo info;
    if (!anim || !WebPAnimDecoderGetInfo(anim.get(), &info) || info.canvas_width != w ||
        info.canvas_height != h) {
      throw ImageError("invalid WebP animation");
    }
    uint8_t* frame = nullptr;
    int timestamp = 0;
    if (!WebPAnimDecoderGetNext(anim.get(), &frame, &timestamp) || !frame) {
      throw ImageError("invalid WebP animation: its first frame does not decode");
    }
    std::memcpy(rgba.data(), frame, rgba.size());
  }
  Image img = white_image(w, h);
  composite_rgba(rgba, img);
  return img;
}

}  // namespace vkllm::image::detail
