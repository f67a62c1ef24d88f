// The image encoders (engine/vision: Gemma 3's SigLIP, Mistral 3's Pixtral) against llama.cpp's
// mtmd on the same files (tests/reference/vision): the make-model projector fixture is
// regenerated (its sha256 checked), the committed PNG decoded, preprocessed and encoded on the
// CPU backend's kernels; the pixels must match llama.cpp's exactly (sizes, letterboxing and
// Pillow-style resampling in fixed point) and every image token's embedding by cosine >= 0.9999
// (measured: 0.9999999). The dense (non-causal) attention the towers use and Pixtral's 2D RoPE
// are checked against double-precision scalar references.
#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <algorithm>
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
#include "engine/model/model_maker.h"
#include "engine/model/projector_maker.h"
#include "engine/vision/dense_attention.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/qwen_vl.h"
#include "engine/vision/rope_2d.h"
#include "engine/vision/vulkan_image_encoder.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/model_reference.h"

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

// Pixtral's 2D RoPE against HF Pixtral's formulation in double precision: frequencies
// theta^(-2k / head_dim), k < head_dim / 2, the even k turning the first half's pairs by the
// patch's row, the odd k the second half's by its column.
TEST(Rope2d, MatchesScalarReference) {
  const uint32_t n = 35, grid_w = 7, H = 3, d = 24, stride = H * d + 8;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * stride);
  for (float& v : x) v = normal(rng);
  const std::vector<float> before = x;
  const Rope2dArgs a{x.data(), stride, n, H, d, grid_w, 10000.0f};
  rope_2d(a, 0, 20);
  rope_2d(a, 20, n);
  double worst = 0;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t half = 0; half < 2; ++half)
        for (uint32_t j = 0; j < d / 4; ++j) {
          const uint32_t k = 2 * j + half;
          const double freq = std::pow(10000.0, -2.0 * k / d);
          const double pos = half == 0 ? t / grid_w : t % grid_w;
          const double c = std::cos(pos * freq), sn = std::sin(pos * freq);
          const size_t i = size_t{t} * stride + h * d + half * d / 2 + 2 * j;
          const double x0 = before[i], x1 = before[i + 1];
          worst = std::max(worst, std::fabs(x0 * c - x1 * sn - x[i]));
          worst = std::max(worst, std::fabs(x0 * sn + x1 * c - x[i + 1]));
        }
  for (uint32_t t = 0; t < n; ++t)  // the stride's padding is left alone
    for (uint32_t i = H * d; i < stride; ++i)
      EXPECT_EQ(x[size_t{t} * stride + i], before[size_t{t} * stride + i]);
  EXPECT_LT(worst, 2e-5);  // float angles up to 6 rad
}

// The Vulkan kernel (shaders/rope_2d.comp) against the CPU function, on tokens in a shuffled
// order with their grid positions given, as the Vulkan encoder lays them out.
TEST(Rope2dOnVulkan, MatchesCpu) {
  const uint32_t grid_w = 9, n = 54, H = 4, d = 40, stride = H * d;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * stride);
  for (float& v : x) v = normal(rng);
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> shuffled(x.size());
  std::vector<uint32_t> pos(2 * n);
  for (uint32_t i = 0; i < n; ++i) {
    std::copy_n(&x[size_t{order[i]} * stride], stride, &shuffled[size_t{i} * stride]);
    pos[2 * i] = order[i] / grid_w;
    pos[2 * i + 1] = order[i] % grid_w;
  }
  rope_2d({x.data(), stride, n, H, d, grid_w, 10000.0f}, 0, n);

  vk::Context& ctx = test::vk_context();
  vk::Buffer xb(ctx.device(), shuffled.size() * 4, vk::MemoryKind::DeviceLocal, "x");
  vk::Buffer pb(ctx.device(), pos.size() * 4, vk::MemoryKind::DeviceLocal, "pos");
  vk::upload(ctx.device(), xb.slice(), std::span<const float>(shuffled));
  vk::upload(ctx.device(), pb.slice(), std::span<const uint32_t>(pos));
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  vk::ops::rope_2d(rec, ctx.pipelines(), {xb.slice(), pb.slice(), n, H, d, 0, 10000.0f});
  rec.submit_and_wait();
  const std::vector<float> got = vk::download<float>(ctx.device(), xb.slice(), shuffled.size());
  float worst = 0;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t e = 0; e < stride; ++e)
      worst = std::max(worst,
                       std::fabs(got[size_t{i} * stride + e] - x[size_t{order[i]} * stride + e]));
  EXPECT_LT(worst, 1e-4f);  // GPU sin/cos of angles up to 5 rad
}

// Qwen2.5-VL's vision RoPE against HF's formulation in double precision (rotate_half over
// cat(freqs, freqs), freqs = (row, column) x theta^(-2k / (head_dim / 2)), k < head_dim / 4), on
// the CPU and in rope_2d.comp's halves mode, tokens at positions in any order.
TEST(RopeVision, CpuAndVulkanMatchScalarReference) {
  const uint32_t n = 30, H = 2, d = 40, stride = H * d;
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * stride);
  for (float& v : x) v = normal(rng);
  std::vector<uint32_t> pos(2 * n);
  for (uint32_t& p : pos) p = rng() % 12;
  std::vector<float> want(x.size());
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t h = 0; h < H; ++h)
      for (uint32_t i = 0; i < d / 2; ++i) {
        const uint32_t k = i % (d / 4);
        const double angle =
            (i < d / 4 ? pos[2 * t] : pos[2 * t + 1]) * std::pow(10000.0, -2.0 * k / (d / 2));
        const size_t at = size_t{t} * stride + h * d + i;
        const double x0 = x[at], x1 = x[at + d / 2];
        want[at] = float(x0 * std::cos(angle) - x1 * std::sin(angle));
        want[at + d / 2] = float(x0 * std::sin(angle) + x1 * std::cos(angle));
      }
  std::vector<float> cpu = x;
  rope_vision({cpu.data(), stride, H, d, pos.data(), 10000.0f}, 0, n);
  vk::Context& ctx = test::vk_context();
  vk::Buffer xb(ctx.device(), x.size() * 4, vk::MemoryKind::DeviceLocal, "x");
  vk::Buffer pb(ctx.device(), pos.size() * 4, vk::MemoryKind::DeviceLocal, "pos");
  vk::upload(ctx.device(), xb.slice(), std::span<const float>(x));
  vk::upload(ctx.device(), pb.slice(), std::span<const uint32_t>(pos));
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  vk::ops::rope_2d(rec, ctx.pipelines(), {xb.slice(), pb.slice(), n, H, d, 0, 10000.0f, true});
  rec.submit_and_wait();
  const std::vector<float> gpu = vk::download<float>(ctx.device(), xb.slice(), x.size());
  float worst_cpu = 0, worst_gpu = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst_cpu = std::max(worst_cpu, std::fabs(cpu[i] - want[i]));
    worst_gpu = std::max(worst_gpu, std::fabs(gpu[i] - want[i]));
  }
  EXPECT_LT(worst_cpu, 2e-5f);  // float angles up to 11 rad
  EXPECT_LT(worst_gpu, 1e-4f);  // GPU sin/cos
}

// Qwen2.5-VL's tower layout: units' patches consecutive, windows of 4 x 4 units clipped at the
// edges (a 14 x 10 unit grid: 4 x 3 windows, the last column 2 units wide, the last row 2 high).
TEST(QwenVlLayout, WindowsOfUnitsClippedAtTheEdges) {
  const QwenVlLayout l = qwen_vl_layout(28, 20, 4);
  ASSERT_EQ(l.order.size(), 560u);
  EXPECT_EQ(std::vector<uint32_t>(l.order.begin(), l.order.begin() + 6),
            (std::vector<uint32_t>{0, 1, 28, 29, 2, 3}));
  ASSERT_EQ(l.windows.size(), 13u);
  EXPECT_EQ(l.windows[1], 64u);                   // 4 x 4 units of 4 patches
  EXPECT_EQ(l.windows[4] - l.windows[3], 32u);    // 2 x 4 units at the right edge
  EXPECT_EQ(l.windows[12] - l.windows[11], 16u);  // 2 x 2 in the corner
  EXPECT_EQ(l.unit_of[4], 16u);                   // unit (0, 4): the first of the second window
  std::vector<uint32_t> seen(560, 0);
  for (size_t i = 0; i < l.order.size(); ++i) {
    ++seen[l.order[i]];
    EXPECT_EQ(l.pos[2 * i] * 28 + l.pos[2 * i + 1], l.order[i]);
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1u), 560);
  EXPECT_THROW(qwen_vl_layout(27, 20, 4), std::invalid_argument);
}

// Pixtral's sizes as llama.cpp's calc_size_preserved_ratio gives them for the published tower
// (patch 14, 2x2 merger: 28-pixel steps, 8 to 1024 merged patches).
TEST(PixtralSizes, FitTheBudgetKeepingTheAspectRatio) {
  VisionSpec s;
  s.projector = ProjectorType::Pixtral;
  s.patch_size = 14;
  s.n_merge = 2;
  s.min_pixels = 8 * 28 * 28;
  s.max_pixels = 1024 * 28 * 28;
  auto size = [&](uint32_t w, uint32_t h) {
    const TowerSize t = tower_size(s, w, h);
    return std::to_string(t.width) + "x" + std::to_string(t.height);
  };
  EXPECT_EQ(size(300, 200), "308x196");  // rounded to the nearest step
  EXPECT_EQ(size(90, 130), "84x140");
  EXPECT_EQ(size(4000, 3000), "1008x756");                     // over budget: scaled down, floored
  EXPECT_EQ(size(20, 20), "84x84");                            // under: scaled up, ceiled
  EXPECT_EQ(image_token_count(s, 4000, 3000), 36u * 27 + 26);  // rows of 36, 26 breaks
  EXPECT_EQ(image_token_count(s, 300, 200), 11u * 7 + 6);
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
  const std::string arch = m.at("arch").get<std::string>();
  if (arch == "mistral3") {  // its projector holds a row of the text model's embeddings
    std::filesystem::path vocab;
    const model::MakeModelOptions mo = reference::read_make_model_options(m, name, "model", &vocab);
    c.projector = reference::make_pixtral_projector_bytes(
        mo, vocab, m.at("projector_shape").get<std::string>());
    return c;
  }
  model::MakeProjectorOptions o;
  o.arch = arch;
  o.shape = model::parse_projector_shape(m.at("projector_shape").get<std::string>(), o.arch);
  o.text_embd = c.j.at("n_embd").get<uint32_t>();
  if (arch == "qwen3vl") {  // its rows hold the deepstack slices after the text width
    const model::ModelShape text = model::parse_model_shape(m.at("shape").get<std::string>());
    o.text_embd = text.n_embd;
    o.n_deepstack = model::qwen3vl_deepstack_layers(text.n_layer);
  }
  o.f32 = m.at("type").get<std::string>() == "F32";
  o.seed = m.at("seed").get<uint64_t>();
  gguf::GgufWriter w;
  model::build_random_projector(o, w);
  c.projector = w.serialize();
  return c;
}

class VisionVsLlamaCpp : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionVsLlamaCpp, PixelsAndEmbeddings) {
  const VisionCase c = load_case(GetParam());
  ASSERT_EQ(sha256_hex(c.projector), c.j.at("model").at("projector_sha256").get<std::string>())
      << "make-model's projector changed: re-record with /work/llamacpp/record_vision.py";
  const std::vector<uint8_t> png = read_bytes(vision_dir() / c.j.at("image").get<std::string>());
  const image::Image img = image::decode(png);
  ImageEncoder encoder(gguf::GgufFile::parse(c.projector), 2);

  // Preprocessing: llama.cpp's planes, summarised. Every value is (k / 255 - mean) / std, summed
  // in the same order, so the sums agree to rounding; one pixel off by one level would move the
  // sum by 2/255 and the weighted sum by more.
  const TowerPixels pixels = encoder.preprocess(img);
  const std::vector<float>& planes = pixels.planes;
  const auto& px = c.j.at("pixels");
  ASSERT_EQ(pixels.width, px.at("width").get<uint32_t>());
  ASSERT_EQ(pixels.height, px.at("height").get<uint32_t>());
  double sum = 0, sum_sq = 0, weighted = 0;
  for (size_t i = 0; i < planes.size(); ++i) {
    const double v = planes[i];
    sum += v, sum_sq += v * v, weighted += v * double(i % 251 + 1);
  }
  EXPECT_NEAR(sum, px.at("sum").get<double>(), 1e-6);
  EXPECT_NEAR(sum_sq, px.at("sum_sq").get<double>(), 1e-6);
  EXPECT_NEAR(weighted, px.at("weighted").get<double>(), 1e-4);
  const uint32_t W = pixels.width, H = pixels.height;
  const size_t plane = size_t{W} * H, centre = size_t{H / 2} * W + W / 2 - 8;
  const auto& mid = px.at("centre");
  for (size_t ch = 0; ch < 3; ++ch)
    for (size_t i = 0; i < mid[ch].size(); ++i)
      EXPECT_EQ(planes[ch * plane + centre + i], mid[ch][i].get<float>()) << "channel " << ch;

  const ImageEmbeddings got = encoder.encode_pixels(pixels);
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

// The Vulkan encoder (lavapipe here: about 2 s for Gemma 3's one-layer case, so only it runs
// there; Pixtral's tall image, 60 patches) against llama.cpp: its attention reads K/V rounded to
// f16 (the paged cache's type), so the bound is the quantized one, 0.999.
class VisionOnVulkan : public ::testing::TestWithParam<std::string> {};

TEST_P(VisionOnVulkan, MatchesLlamaCpp) {
  const std::string name = GetParam();
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

// One Vulkan encoder given Pixtral images of two sizes in turn (its buffers grow for the larger
// and serve the smaller again) matches the CPU encoder on each.
TEST(PixtralOnVulkan, ImagesOfTwoSizesInTurn) {
  const VisionCase c = load_case("mistral3-tall");
  VulkanImageEncoder gpu(test::vk_context(), gguf::GgufFile::parse(c.projector));
  ImageEncoder cpu(gguf::GgufFile::parse(c.projector), 2);
  for (const char* name : {"tall-90x130.png", "wide-300x200.png", "tall-90x130.png"}) {
    const image::Image img = image::decode(read_bytes(vision_dir() / name));
    const ImageEmbeddings want = cpu.encode(img), got = gpu.encode(img);
    ASSERT_EQ(got.n_tokens, want.n_tokens) << name;
    for (uint32_t t = 0; t < got.n_tokens; ++t)
      EXPECT_GE(reference::cosine(got.row(t), want.row(t)), 0.999) << name << " token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, VisionOnVulkan,
                         ::testing::Values("gemma3-vulkan", "mistral3-tall", "qwen2vl-tall",
                                           "gemma4-tall", "qwen3vl-tall"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

// By hand: Gemma 4 E2B's tower widths (768 wide, 12 heads of 64, FFN 3072; one layer), about 15 s
// on lavapipe (tests/reference/vision/README.md).
INSTANTIATE_TEST_SUITE_P(DISABLED_ByHand, VisionOnVulkan, ::testing::Values("gemma4-e2b-prompt"),
                         [](const auto&) { return std::string("gemma4_e2b_prompt"); });

INSTANTIATE_TEST_SUITE_P(Cases, VisionVsLlamaCpp,
                         ::testing::Values("gemma3-wide", "gemma3-tall", "gemma3-widths",
                                           "gemma3-vulkan", "mistral3-prompt", "mistral3-tall",
                                           "qwen2vl-prompt", "qwen2vl-tall", "gemma4-prompt",
                                           "gemma4-tall", "qwen3vl-prompt"),
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

namespace vkllm::vision {
namespace {

TEST(PixtralVision, RefusesWhatItCannotRead) {
  model::MakeProjectorOptions o;
  o.arch = "mistral3";
  o.shape = model::parse_projector_shape("test", o.arch);
  o.text_embd = 256;
  o.img_break.assign(256, 0.5f);
  {
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    w.set_bool("clip.use_silu", false);
    EXPECT_NE(load_error(w).find("without clip.use_silu"), std::string::npos);
  }
  {
    // A 3x3 merger said over a file's 2x2 one.
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    w.set_u32("clip.vision.spatial_merge_size", 3);
    const std::string e = load_error(w);
    EXPECT_NE(e.find("mm.patch_merger.weight of shape [1152, 128] (the file's is [512, 128])"),
              std::string::npos)
        << e;
  }
  EXPECT_THROW(model::parse_projector_shape("gemma3-4b", "mistral3"), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::vision
