// JPEG through libjpeg-turbo's TurboJPEG API, which reports errors by return value (the classic
// libjpeg API reports them by longjmp, which must not cross C++ frames).
#include <turbojpeg.h>

#include <memory>
#include <string>

#include "engine/image/image_formats.h"

namespace vkllm::image::detail {

namespace {

struct TjClose {
  void operator()(void* handle) const { tjDestroy(handle); }
};

}  // namespace

Image decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  const std::unique_ptr<void, TjClose> tj(tjInitDecompress());
  if (!tj) throw ImageError("cannot start the JPEG decoder");
  const auto error = [&](const char* what) {
    return ImageError(std::string("invalid JPEG (") + what + "): " + tjGetErrorStr2(tj.get()));
  };
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    throw error("header");
  }
  check_size("JPEG", static_cast<uint64_t>(width), static_cast<uint64_t>(height), limits);
  Image img = white_image(static_cast<uint32_t>(width), static_cast<uint32_t>(height));
  // LIMITSCANS: a progressive file of thousands of tiny scans takes minutes to decode; 500 is
  // libjpeg-turbo's own bound for it. Warnings (data after the end, a few corrupt bytes) still
  // give the picture, as browsers show it; a fatal error throws.
  if (tjDecompress2(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()),
                    img.rgb.data(), width, 0, height, TJPF_RGB, TJFLAG_LIMITSCANS) != 0 &&
      tjGetErrorCode(tj.get()) == TJERR_FATAL) {
    throw error("data");
  }
  return img;
}

}  // namespace vkllm::image::detail
