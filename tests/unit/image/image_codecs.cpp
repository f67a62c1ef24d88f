#include "tests/unit/image/image_codecs.h"

#include <gif_lib.h>
#include <png.h>
#include <turbojpeg.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace vkllm::image::test {

std::vector<uint8_t> random_rgba(uint32_t w, uint32_t h, std::mt19937& rng, bool alpha) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> out(size_t{w} * h * 4);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(i % 4 == 3 && !alpha ? 255 : byte(rng));
  }
  return out;
}

std::vector<uint8_t> encode_png(const std::vector<uint8_t>& rgba, uint32_t w, uint32_t h) {
  png_image im{};
  im.version = PNG_IMAGE_VERSION;
  im.width = w;
  im.height = h;
  im.format = PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&im, nullptr, &size, 0, rgba.data(), 0, nullptr)) {
    throw std::runtime_error(im.message);
  }
  std::vector<uint8_t> out(size);
  if (!png_image_write_to_memory(&im, out.data(), &size, 0, rgba.data(), 0, nullptr)) {
    throw std::runtime_error(im.message);
  }
  out.resize(size);
  return out;
}

std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& rgba, uint32_t w, uint32_t h,
                                 int quality) {
  const std::unique_ptr<void, int (*)(tjhandle)> tj(tjInitCompress(), tjDestroy);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj.get(), rgba.data(), static_cast<int>(w), 0, static_cast<int>(h), TJPF_RGBA,
                  &jpeg, &size, TJSAMP_444, quality, TJFLAG_ACCURATEDCT) != 0) {
    throw std::runtime_error(tjGetErrorStr2(tj.get()));
  }
  std::vector<uint8_t> out(jpeg, jpeg + size);
  tjFree(jpeg);
  return out;
}

std::vector<uint8_t> encode_webp_lossless(const std::vector<uint8_t>& rgba, uint32_t w,
                                          uint32_t h) {
  uint8_t* data = nullptr;
  const size_t size = WebPEncodeLosslessRGBA(rgba.data(), static_cast<int>(w), static_cast<int>(h),
                                             static_cast<int>(w * 4), &data);
  if (size == 0) throw std::runtime_error("WebPEncodeLosslessRGBA failed");
  std::vector<uint8_t> out(data, data + size);
  WebPFree(data);
  return out;
}

std::vector<uint8_t> encode_webp_animation(const std::vector<std::vector<uint8_t>>& frames,
                                           uint32_t w, uint32_t h) {
  WebPAnimEncoderOptions options;
  WebPAnimEncoderOptionsInit(&options);
  const std::unique_ptr<WebPAnimEncoder, void (*)(WebPAnimEncoder*)> enc(
      WebPAnimEncoderNew(static_cast<int>(w), static_cast<int>(h), &options),
      WebPAnimEncoderDelete);
  WebPConfig config;
  WebPConfigInit(&config);
  config.lossless = 1;
  int timestamp = 0;
  for (const auto& rgba : frames) {
    WebPPicture pic;
    WebPPictureInit(&pic);
    pic.use_argb = 1;
    pic.width = static_cast<int>(w);
    pic.height = static_cast<int>(h);
    WebPPictureImportRGBA(&pic, rgba.data(), static_cast<int>(w * 4));
    const bool ok = WebPAnimEncoderAdd(enc.get(), &pic, timestamp, &config);
    WebPPictureFree(&pic);
    if (!ok) throw std::runtime_error("WebPAnimEncoderAdd failed");
    timestamp += 100;
  }
  WebPAnimEncoderAdd(enc.get(), nullptr, timestamp, nullptr);
  WebPData data;
  WebPDataInit(&data);
  if (!WebPAnimEncoderAssemble(enc.get(), &data)) throw std::runtime_error("assemble failed");
  std::vector<uint8_t> out(data.bytes, data.bytes + data.size);
  WebPDataClear(&data);
  return out;
}

namespace {

int write_memory(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<std::vector<uint8_t>*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}

}  // namespace

std::vector<uint8_t> encode_gif(const std::vector<uint8_t>& palette, uint32_t w, uint32_t h,
                                const std::vector<GifFrame>& frames, bool interlace) {
  std::vector<uint8_t> out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, write_memory, &error);
  if (!gif) throw std::runtime_error("EGifOpen failed");
  const int colors = static_cast<int>(palette.size() / 3);
  ColorMapObject* map = GifMakeMapObject(colors, nullptr);
  for (int i = 0; i < colors; ++i) {
    map->Colors[i] = {palette[i * 3], palette[i * 3 + 1], palette[i * 3 + 2]};
  }
  EGifSetGifVersion(gif, true);
  bool ok =
      EGifPutScreenDesc(gif, static_cast<int>(w), static_cast<int>(h), 8, 0, map) != GIF_ERROR;
  for (const GifFrame& f : frames) {
    if (f.transparent >= 0) {
      const GifByteType gce[4] = {1, 0, 0, static_cast<GifByteType>(f.transparent)};
      ok = ok && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, gce) != GIF_ERROR;
    }
    ok = ok && EGifPutImageDesc(gif, 0, 0, static_cast<int>(w), static_cast<int>(h), interlace,
                                nullptr) != GIF_ERROR;
    const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
    for (int p = 0; p < (interlace ? 4 : 1); ++p) {
      for (uint32_t y = interlace ? starts[p] : 0; y < h; y += interlace ? steps[p] : 1) {
        std::vector<GifPixelType> line(f.indices.begin() + y * w, f.indices.begin() + (y + 1) * w);
        ok = ok && EGifPutLine(gif, line.data(), static_cast<int>(w)) != GIF_ERROR;
      }
    }
  }
  GifFreeMapObject(map);
  ok = EGifCloseFile(gif, &error) != GIF_ERROR && ok;
  if (!ok) throw std::runtime_error("GIF encoding failed");
  return out;
}

}  // namespace vkllm::image::test
