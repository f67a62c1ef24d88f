// GIF through giflib, record by record up to the first image (DGifSlurp would decode every frame
// of an animation into memory first). The frame is drawn on the logical screen, its transparent
// colour and the screen outside it left white.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/image/image_formats.h"

namespace vkllm::image::detail {

namespace {

struct MemoryReader {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
};

int read_memory(GifFileType* gif, GifByteType* out, int n) {
  auto* r = static_cast<MemoryReader*>(gif->UserData);
  const size_t k = std::min(static_cast<size_t>(std::max(n, 0)), r->bytes.size() - r->pos);
  std::memcpy(out, r->bytes.data() + r->pos, k);
  r->pos += k;
  return static_cast<int>(k);
}

struct GifClose {
  void operator()(GifFileType* gif) const {
    int error = 0;
    DGifCloseFile(gif, &error);
  }
};

ImageError gif_error(const char* what, int code) {
  const char* text = GifErrorString(code);
  return ImageError(std::string("invalid GIF (") + what + ")" + (text ? ": " : "") +
                    (text ? text : ""));
}

}  // namespace

Image decode_gif(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  MemoryReader reader{bytes};
  int error = 0;
  const std::unique_ptr<GifFileType, GifClose> gif(DGifOpen(&reader, read_memory, &error));
  if (!gif) throw gif_error("header", error);
  check_size("GIF", static_cast<uint64_t>(std::max(gif->SWidth, 0)),
             static_cast<uint64_t>(std::max(gif->SHeight, 0)), limits);
  Image img = white_image(static_cast<uint32_t>(gif->SWidth), static_cast<uint32_t>(gif->SHeight));
  int transparent = -1;  // from the graphics control extension before the image
  for (;;) {
    GifRecordType type;
    if (DGifGetRecordType(gif.get(), &type) == GIF_ERROR) throw gif_error("record", gif->Error);
    if (type == TERMINATE_RECORD_TYPE) throw ImageError("invalid GIF: it holds no image");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* ext = nullptr;
      if (DGifGetExtension(gif.get(), &code, &ext) == GIF_ERROR) {
        throw gif_error("extension", gif->Error);
      }
      if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4) {
        transparent = (ext[1] & 1) ? ext[4] : -1;
      }
      while (ext) {
        if (DGifGetExtensionNext(gif.get(), &ext) == GIF_ERROR) {
          throw gif_error("extension", gif->Error);
        }
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;
    if (DGifGetImageDesc(gif.get()) == GIF_ERROR) throw gif_error("image", gif->Error);
    const GifImageDesc& desc = gif->Image;
    const ColorMapObject* colors = desc.ColorMap ? desc.ColorMap : gif->SColorMap;
    if (!colors) throw ImageError("invalid GIF: the image has no colour table");
    if (desc.Width <= 0 || desc.Height <= 0 || desc.Left < 0 || desc.Top < 0 ||
        static_cast<uint32_t>(desc.Width) > limits.max_side ||
        static_cast<uint32_t>(desc.Height) > limits.max_side) {
      throw ImageError("invalid GIF: a frame of " + std::to_string(desc.Width) + "x" +
                       std::to_string(desc.Height) + " pixels");
    }
    std::vector<GifPixelType> line(static_cast<size_t>(desc.Width));
    // Interlaced rows arrive in four passes: every 8th from 0, every 8th from 4, every 4th from
    // 2, every 2nd from 1.
    const int starts[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
    const int passes = desc.Interlace ? 4 : 1;
    for (int p = 0; p < passes; ++p) {
      const int start = desc.Interlace ? starts[p] : 0, step = desc.Interlace ? steps[p] : 1;
      for (int row = start; row < desc.Height; row += step) {
        if (DGifGetLine(gif.get(), line.data(), desc.Width) == GIF_ERROR) {
          throw gif_error("image data", gif->Error);
        }
        const int y = desc.Top + row;
        if (y >= gif->SHeight) continue;  // outside the screen: clipped
        for (int col = 0; col < desc.Width && desc.Left + col < gif->SWidth; ++col) {
          const int index = line[static_cast<size_t>(col)];
          if (index == transparent) continue;
          if (index >= colors->ColorCount) {
            throw ImageError("invalid GIF: colour " + std::to_string(index) + " of a table of " +
                             std::to_string(colors->ColorCount));
          }
          const GifColorType& c = colors->Colors[index];
          uint8_t* px = &img.rgb[(static_cast<size_t>(y) * img.width + desc.Left + col) * 3];
          px[0] = c.Red;
          px[1] = c.Green;
          px[2] = c.Blue;
        }
      }
    }
    return img;
  }
}

}  // namespace vkllm::image::detail
