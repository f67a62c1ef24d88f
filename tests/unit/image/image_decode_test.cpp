// engine/image: every format decodes to the RGB its encoder was given (JPEG within its loss),
// transparency lands on white, animations give their first frame, and bad or oversized input is
// an ImageError naming the problem. Inputs are fresh random pictures from the libraries' encoders.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/image/image.h"
#include "tests/unit/image/image_codecs.h"

namespace vkllm::image {
namespace {

using test::random_rgba;

// The RGB the model should see for RGBA input: each pixel over white by its alpha.
std::vector<uint8_t> over_white(const std::vector<uint8_t>& rgba) {
  std::vector<uint8_t> rgb;
  for (size_t i = 0; i < rgba.size(); i += 4) {
    const double a = rgba[i + 3] / 255.0;
    for (int c = 0; c < 3; ++c) {
      rgb.push_back(static_cast<uint8_t>(std::lround(rgba[i + c] * a + 255.0 * (1.0 - a))));
    }
  }
  return rgb;
}

std::mt19937 fresh_rng() {
  const uint32_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  return std::mt19937(seed);
}

std::string error_of(const std::vector<uint8_t>& bytes, const ImageLimits& limits = {}) {
  try {
    decode(bytes, limits);
  } catch (const ImageError& e) {
    return e.what();
  }
  return "";
}

TEST(ImageDecode, PngAndLosslessWebpGiveTheirPixelsWithAlphaOverWhite) {
  auto rng = fresh_rng();
  for (const bool alpha : {false, true}) {
    const uint32_t w = 37, h = 23;
    const auto rgba = random_rgba(w, h, rng, alpha);
    for (const auto& [name, bytes] : {std::pair{"PNG", test::encode_png(rgba, w, h)},
                                      std::pair{"WebP", test::encode_webp_lossless(rgba, w, h)}}) {
      SCOPED_TRACE(std::string(name) + (alpha ? " with alpha" : ""));
      const Image img = decode(bytes);
      EXPECT_EQ(format_name(detect_format(bytes)), std::string(name));
      ASSERT_EQ(img.width, w);
      ASSERT_EQ(img.height, h);
      EXPECT_EQ(img.rgb, over_white(rgba));
    }
  }
}

TEST(ImageDecode, JpegGivesItsPixelsWithinTheCompressionLoss) {
  auto rng = fresh_rng();
  // A smooth picture (JPEG's loss on noise is large by design): gradients with a random phase.
  const uint32_t w = 64, h = 40;
  std::uniform_real_distribution<double> phase(0, 6.28);
  const double p[3] = {phase(rng), phase(rng), phase(rng)};
  std::vector<uint8_t> rgba;
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        rgba.push_back(static_cast<uint8_t>(127.5 + 120 * std::sin(p[c] + 0.09 * x + 0.05 * y)));
      }
      rgba.push_back(255);
    }
  }
  const Image img = decode(test::encode_jpeg(rgba, w, h, 98));
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  const auto want = over_white(rgba);
  int worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(img.rgb[i] - want[i]));
  EXPECT_LE(worst, 6);
}

TEST(ImageDecode, AnimationsGiveTheirFirstFrame) {
  auto rng = fresh_rng();
  const uint32_t w = 19, h = 17;
  const std::vector<std::vector<uint8_t>> frames = {random_rgba(w, h, rng), random_rgba(w, h, rng)};
  const Image webp = decode(test::encode_webp_animation(frames, w, h));
  EXPECT_EQ(webp.rgb, over_white(frames[0]));

  std::uniform_int_distribution<int> byte(0, 255), index(0, 15);
  std::vector<uint8_t> palette(16 * 3);
  for (auto& b : palette) b = static_cast<uint8_t>(byte(rng));
  for (const bool interlace : {false, true}) {
    SCOPED_TRACE(interlace ? "interlaced GIF" : "GIF");
    std::vector<test::GifFrame> gif_frames(2);
    for (auto& f : gif_frames) {
      f.indices.resize(size_t{w} * h);
      for (auto& i : f.indices) i = static_cast<uint8_t>(index(rng));
      f.transparent = 3;
    }
    const Image gif = decode(test::encode_gif(palette, w, h, gif_frames, interlace));
    ASSERT_EQ(gif.width, w);
    ASSERT_EQ(gif.height, h);
    for (size_t i = 0; i < size_t{w} * h; ++i) {
      const uint8_t k = gif_frames[0].indices[i];
      for (int c = 0; c < 3; ++c) {
        // The transparent index shows the white beneath.
        ASSERT_EQ(gif.rgb[i * 3 + c], k == 3 ? 255 : palette[k * 3 + c]) << "pixel " << i;
      }
    }
  }
}

TEST(ImageDecode, BadInputIsAnImageErrorThatSaysWhy) {
  auto rng = fresh_rng();
  const auto rgba = random_rgba(24, 24, rng);
  EXPECT_EQ(error_of({}), "the image is empty");
  EXPECT_NE(error_of({'B', 'M', 1, 2, 3}).find("unsupported image format"), std::string::npos);
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> files = {
      {"PNG", test::encode_png(rgba, 24, 24)},
      {"JPEG", test::encode_jpeg(rgba, 24, 24, 90)},
      {"WebP", test::encode_webp_lossless(rgba, 24, 24)},
      {"GIF", test::encode_gif({0, 0, 0, 255, 255, 255}, 24, 24,
                               {{std::vector<uint8_t>(24 * 24, 1), -1}})}};
  for (const auto& [name, bytes] : files) {
    SCOPED_TRACE(name);
    // Cut inside the header: every format fails, naming itself.
    const std::vector<uint8_t> head(bytes.begin(), bytes.begin() + 14);
    EXPECT_NE(error_of(head).find(name), std::string::npos) << error_of(head);
    // Cut inside the data: a fatal error, except JPEG, which decodes what arrived (a warning
    // for libjpeg-turbo, as for browsers).
    const std::vector<uint8_t> half(bytes.begin(), bytes.begin() + bytes.size() / 2);
    if (name != "JPEG") {
      EXPECT_NE(error_of(half), "");
    }
    // Random corruption after the signature never crashes: it decodes or throws ImageError.
    std::uniform_int_distribution<size_t> at(8, bytes.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> bad = bytes;
      for (int k = 0; k < 1 + trial % 8; ++k) bad[at(rng)] = static_cast<uint8_t>(byte(rng));
      try {
        const Image img = decode(bad);
        EXPECT_EQ(img.rgb.size(), size_t{img.width} * img.height * 3);
      } catch (const ImageError&) {
      }
    }
  }
}

TEST(ImageDecode, SizesPastTheLimitsAreRefusedFromTheHeader) {
  auto rng = fresh_rng();
  const auto png = test::encode_png(random_rgba(100, 80, rng), 100, 80);
  EXPECT_EQ(error_of(png, {.max_bytes = 100}),
            "the image is " + std::to_string(png.size()) + " bytes, more than the 100 allowed");
  EXPECT_EQ(error_of(png, {.max_side = 90}),
            "PNG image of 100x80 pixels: a side may be 90 at most");
  EXPECT_EQ(error_of(png, {.max_pixels = 7999}),
            "PNG image of 100x80 pixels: more than the 7999 allowed");
  // A GIF whose screen claims 65535 x 65535 pixels in 13 bytes: refused before any allocation.
  const std::vector<uint8_t> huge_gif = {'G',  'I',  'F',  '8',  '9',  'a',  0xFF,
                                         0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, ';'};
  EXPECT_EQ(error_of(huge_gif), "GIF image of 65535x65535 pixels: a side may be 16384 at most");
}

}  // namespace
}  // namespace vkllm::image
