// Gemma 3's image encoder (engine/vision) against llama.cpp's mtmd on the same files
// (tests/reference/vision): the make-model projector fixture is regenerated (its sha256 checked),
// the committed PNG decoded, preprocessed and encoded on the CPU backend's kernels; the pixels
// must match llama.cpp's exactly (letterboxing and Pillow-style resampling in fixed point) and
// every image token's embedding by cosine >= 0.9999 (measured: 0.9999999). The dense
// (non-causal) attention the tower uses is checked against a double-precision scalar reference.
#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/image/image.h"
#include "engine/model/projector_maker.h"
#include "engine/vision/dense_attention.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vulkan_image_encoder.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"

namespace vkllm::vision {
namespace {

std::filesystem::path vision_dir() {
  return std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" / "reference" / "vision";
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(bytes.data(), bytes.size(), digest);
  std::string hex;
  char buf[3];
  for (unsigned char b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

TEST(DenseAttention, MatchesScalarReference) {
  // 3 heads of 20 over 601 tokens: two query tiles (the second partial), rows and heads sizes off
  // every vector width, and a row stride wider than the heads.
  const uint32_t n = 601, H = 3, d = 20, stride = H * d + 4;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(n * stride), k(n * stride), v(n * stride), out(n * H * d, NAN);
  for (auto* buf : {&q, &k, &v})
    for (float& x : *buf) x = normal(rng);
  const float scale = 0.4f;
  const DenseAttentionArgs a{q.data(), k.data(), v.data(), stride, out.data(),
                             H * d,    n,        H,        d,      scale};
  cpu::ThreadPool pool(2);
  cpu::MatmulWorkspace ws;
  dense_attention(a, pool, ws);
  double worst = 0;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t h = 0; h < H; ++h) {
      std::vector<double> p(n);
      double mx = -1e300, total = 0;
      for (uint32_t s = 0; s < n; ++s) {
        double dot = 0;
        for (uint32_t i = 0; i < d; ++i)
          dot += double(q[t * stride + h * d + i]) * k[s * stride + h * d + i];
        p[s] = scale * dot;
        mx = std::max(mx, p[s]);
      }
      for (double& x : p) total += (x = std::exp(x - mx));
      for (uint32_t i = 0; i < d; ++i) {
        double want = 0;
        for (uint32_t s = 0; s < n; ++s) want += p[s] / total * v[s * stride + h * d + i];
        worst = std::max(worst, std::fabs(want - out[t * H * d + h * d + i]));
      }
    }
  // float32 sums over 601 keys (and the kernels' exp approximation): under 1e-5 on an AVX2 machine,
  // 3e-5 on the H200 host's AVX-512 path, so the bound leaves room for the instruction set.
  EXPECT_LT(worst, 1e-4);
}

struct VisionCase {
  nlohmann::json j;
  std::vector<uint8_t> projector;
};

VisionCase load_case(const std::string& name) {
  VisionCase c;
  std::ifstream in(vision_dir() / (name + ".json"));
  c.j = nlohmann::json::parse(in);
  const auto& m = c.j.at("model");
  model::MakeProjectorOptions o;
  o.arch = m.at("arch").get<std::string>();
  o.shape = model::parse_projector_shape(m.at("projector_shape").get<std::string>());
  o.text_embd = c.j.at("n_embd").get<uint32_t>();
  o.f32 = m.at("type").get<std::string>() == "F32";
  o.seed = m.at("seed").get<uint64_t>();
  gguf::GgufWriter w;
  model::build_random_projector(o, w);
  c.projector = w.serialize();
  return c;
}

class Gemma3VisionVsLlamaCpp : public ::testing::TestWithParam<std::string> {};

TEST_P(Gemma3VisionVsLlamaCpp, PixelsAndEmbeddings) {
  const VisionCase c = load_case(GetParam());
  ASSERT_EQ(sha256_hex(c.projector), c.j.at("model").at("projector_sha256").get<std::string>())
      << "make-model's projector changed: re-record with /work/llamacpp/record_vision.py";
  const std::vector<uint8_t> png = read_bytes(vision_dir() / c.j.at("image").get<std::string>());
  const image::Image img = image::decode(png);
  ImageEncoder encoder(gguf::GgufFile::parse(c.projector), 2);

  // Preprocessing: llama.cpp's planes, summarised. Every value is (k / 255 - mean) / std, summed
  // in the same order, so the sums agree to rounding; one pixel off by one level would move the
  // sum by 2/255 and the weighted sum by more.
  const std::vector<float> planes = encoder.preprocess(img);
  const auto& px = c.j.at("pixels");
  ASSERT_EQ(px.at("width").get<uint32_t>(), encoder.spec().image_size);
  double sum = 0, sum_sq = 0, weighted = 0;
  for (size_t i = 0; i < planes.size(); ++i) {
    const double v = planes[i];
    sum += v, sum_sq += v * v, weighted += v * double(i % 251 + 1);
  }
  EXPECT_NEAR(sum, px.at("sum").get<double>(), 1e-6);
  EXPECT_NEAR(sum_sq, px.at("sum_sq").get<double>(), 1e-6);
  EXPECT_NEAR(weighted, px.at("weighted").get<double>(), 1e-4);
  const uint32_t S = encoder.spec().image_size;
  const size_t plane = size_t{S} * S, centre = size_t{S / 2} * S + S / 2 - 8;
  const auto& mid = px.at("centre");
  for (size_t ch = 0; ch < 3; ++ch)
    for (size_t i = 0; i < mid[ch].size(); ++i)
      EXPECT_EQ(planes[ch * plane + centre + i], mid[ch][i].get<float>()) << "channel " << ch;

  const ImageEmbeddings got = encoder.encode_pixels(planes);
  const auto& want = c.j.at("embeddings");
  ASSERT_EQ(got.n_tokens, want.size());
  ASSERT_EQ(got.n_embd, c.j.at("n_embd").get<uint32_t>());
  double worst = 1.0;
  for (uint32_t t = 0; t < got.n_tokens; ++t) {
    const std::vector<float> row = want[t].get<std::vector<float>>();
    const double cos = reference::cosine(got.row(t), row);
    worst = std::min(worst, cos);
    EXPECT_GE(cos, 0.9999) << "image token " << t;
  }
  std::printf("%s: %u image tokens of %u, worst cosine %.7f\n", GetParam().c_str(), got.n_tokens,
              got.n_embd, worst);
}

// The Vulkan encoder (lavapipe here: about 2 s for this one-layer case, so only it runs there)
// against llama.cpp: its attention reads K/V rounded to f16 (the paged cache's type), so the
// bound is the quantized one, 0.999.
TEST(Gemma3VisionOnVulkan, MatchesLlamaCpp) {
  const std::string name = "gemma3-vulkan";
  const VisionCase c = load_case(name);
  const std::vector<uint8_t> png = read_bytes(vision_dir() / c.j.at("image").get<std::string>());
  VulkanImageEncoder encoder(test::vk_context(), gguf::GgufFile::parse(c.projector));
  const ImageEmbeddings got = encoder.encode(image::decode(png));
  const auto& want = c.j.at("embeddings");
  ASSERT_EQ(got.n_tokens, want.size());
  double worst = 1.0;
  for (uint32_t t = 0; t < got.n_tokens; ++t) {
    const double cos = reference::cosine(got.row(t), want[t].get<std::vector<float>>());
    worst = std::min(worst, cos);
    EXPECT_GE(cos, 0.999) << "image token " << t;
  }
  std::printf("%s on Vulkan: worst cosine %.7f\n", name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Cases, Gemma3VisionVsLlamaCpp,
                         ::testing::Values("gemma3-wide", "gemma3-tall", "gemma3-widths",
                                           "gemma3-vulkan"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

// A projector the encoder cannot use fails at load with a message naming why, never later.
std::string load_error(gguf::GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.serialize();
  try {
    ImageEncoder e(gguf::GgufFile::parse(bytes), 1);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Gemma3Vision, RefusesWhatItCannotRead) {
  model::MakeProjectorOptions o;
  o.shape = model::parse_projector_shape("test");
  o.text_embd = 256;
  {
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    w.set_string("clip.projector_type", "qwen2vl");
    EXPECT_NE(load_error(w).find("'qwen2vl' is not supported"), std::string::npos);
  }
  {
    // Learned positions for a 224 px image in a tower said to take 280 px (20 x 20 patches).
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    w.set_u32("clip.vision.image_size", 280);
    const std::string e = load_error(w);
    EXPECT_NE(e.find("v.position_embd.weight of shape [128, 400] (the file's is [128, 256])"),
              std::string::npos)
        << e;
  }
  {
    gguf::GgufWriter w;  // a text model's file given as the projector
    w.set_string("general.architecture", "gemma3");
    EXPECT_NE(load_error(w).find("no vision encoder"), std::string::npos);
  }
}

}  // namespace
}  // namespace vkllm::vision
