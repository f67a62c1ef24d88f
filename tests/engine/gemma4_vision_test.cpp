// Gemma 4's vision parts (engine/vision/gemma4_vision.h) against scalar references: its 2D RoPE
// (HF's Gemma 4 vision rotary: each half of a head NeoX-rotated by the patch's column, then row),
// the quick GELU, the projector reader's refusals, and the two kernels its Vulkan tower added. The
// tower's output against llama.cpp is vision_test.cpp's gemma4-* cases; the logits after an image
// image_prompt_test.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/projector_maker.h"
#include "engine/vision/gemma4_vision.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_prompt.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/ops.h"
#include "tests/engine/vk_test_context.h"

namespace vkllm::vision {
namespace {

// In double precision: dims [0, d/2) turn by the column, [d/2, d) by the row; within a half of
// h = d/2 values, pair (i, i + h/2) by pos * theta^(-2i / h).
TEST(Gemma4vRope, MatchesScalarReference) {
  const uint32_t grid_w = 6, n = 30, H = 3, d = 32, stride = H * d + 4;
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n * stride);
  for (float& v : x) v = normal(rng);
  const std::vector<float> before = x;
  const Gemma4vRopeArgs a{x.data(), stride, H, d, grid_w, 100.0f};
  rope_gemma4v(a, 0, 11);
  rope_gemma4v(a, 11, n);
  double worst = 0;
  const uint32_t h = d / 2;
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t head = 0; head < H; ++head)
      for (uint32_t part = 0; part < 2; ++part)
        for (uint32_t i = 0; i < h / 2; ++i) {
          const double pos = part == 0 ? t % grid_w : t / grid_w;
          const double angle = pos * std::pow(100.0, -2.0 * i / h);
          const size_t at = size_t{t} * stride + head * d + part * h + i;
          const double x0 = before[at], x1 = before[at + h / 2];
          worst = std::max(worst, std::fabs(x0 * std::cos(angle) - x1 * std::sin(angle) - x[at]));
          worst = std::max(worst,
                           std::fabs(x0 * std::sin(angle) + x1 * std::cos(angle) - x[at + h / 2]));
        }
  for (uint32_t t = 0; t < n; ++t)  // the stride's padding is left alone
    for (uint32_t i = H * d; i < stride; ++i)
      EXPECT_EQ(x[size_t{t} * stride + i], before[size_t{t} * stride + i]);
  EXPECT_LT(worst, 2e-5);  // float angles up to 5 rad
}

TEST(Gemma4vRope, QuickGeluTimesUp) {
  std::vector<float> gate = {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f}, up = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f};
  const std::vector<float> g0 = gate;
  gelu_quick_mul(gate.data(), up.data(), gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double want = g0[i] / (1.0 + std::exp(-1.702 * g0[i])) * up[i];
    EXPECT_NEAR(gate[i], want, 1e-6);
  }
}

std::string gemma4v_load_error(gguf::GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.serialize();
  try {
    ImageEncoder e(gguf::GgufFile::parse(bytes), 1);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Gemma4Vision, SpecLayoutAndRefusals) {
  model::MakeProjectorOptions o;
  o.arch = "gemma4";
  o.shape = model::parse_projector_shape("test", o.arch);
  o.text_embd = 128;
  {
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    const std::vector<uint8_t> bytes = w.serialize();
    const gguf::GgufFile f = gguf::GgufFile::parse(bytes);
    const VisionSpec s = read_vision_spec(f);
    EXPECT_EQ(s.projector, ProjectorType::Gemma4v);
    EXPECT_EQ(s.n_merge, 3u);
    EXPECT_EQ(s.n_positions, 256u);
    EXPECT_EQ(s.text_embd, 128u);
    // llama.cpp's sizes: 70 to 1120 pooled 48-pixel cells, aspect kept.
    EXPECT_EQ(tower_size(s, 300, 200).width, 528u);
    EXPECT_EQ(tower_size(s, 300, 200).height, 336u);
    EXPECT_EQ(image_token_count(s, 300, 200), 77u);
    EXPECT_EQ(image_token_count(s, 4000, 3000), 38u * 28);  // over budget: floored
    const ImageLayout l = image_layout(s);
    EXPECT_EQ(l.begin, "<|image>");
    EXPECT_EQ(l.end, "<image|>");
    EXPECT_TRUE(l.open);  // a 128-wide text model: not E2B / E4B
    VisionSpec e2b = s;
    e2b.text_embd = 1536;
    EXPECT_FALSE(image_layout(e2b).open);
  }
  {
    gguf::GgufWriter w;
    model::build_random_projector(o, w);
    w.set_u32("clip.vision.attention.head_count", 5);
    EXPECT_NE(gemma4v_load_error(w).find("inconsistent sizes"), std::string::npos);
  }
  {
    gguf::GgufWriter w;  // a clamp bound that is not one value
    model::build_random_projector(o, w);
    w.rename_tensor("v.blk.0.attn_q.input_max", "unused");
    w.add_tensor("v.blk.0.attn_q.input_max", gguf::TensorType::F32, {2},
                 std::vector<uint8_t>(8, 0));
    EXPECT_NE(gemma4v_load_error(w).find("is not one F32 value"), std::string::npos);
  }
  EXPECT_THROW(model::parse_projector_shape("gemma3-4b", "gemma4"), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::vision

namespace vkllm::vision {
namespace {

// The two kernels Gemma 4's Vulkan tower added to existing shaders, against scalar references:
// elementwise.comp's clamp (op 6) and glu.comp's quick GELU (act 3).
TEST(Gemma4vOnVulkan, ClampAndQuickGeluMatchScalarReferences) {
  const uint32_t n = 1000, rows = 4, width = n / rows;
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> a(n), b(n);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  vk::Context& ctx = test::vk_context();
  auto upload = [&](const std::vector<float>& v, const char* name) {
    vk::Buffer buf(ctx.device(), v.size() * 4, vk::MemoryKind::DeviceLocal, name);
    vk::upload(ctx.device(), buf.slice(), std::span<const float>(v));
    return buf;
  };
  vk::Buffer ab = upload(a, "a"), bb = upload(b, "b");
  vk::Buffer clamped(ctx.device(), n * 4, vk::MemoryKind::DeviceLocal, "clamped");
  vk::Buffer glu(ctx.device(), n * 4, vk::MemoryKind::DeviceLocal, "glu");
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  vk::ops::clamp(rec, ctx.pipelines(), ab.slice(), clamped.slice(), n, -1.5f, 2.25f);
  vk::ops::GluArgs g;
  g.gate = ab.slice();
  g.up = bb.slice();
  g.out = glu.slice();
  g.n = width;
  g.n_rows = rows;
  g.act = vk::ops::GluActivation::GeluQuick;
  vk::ops::glu(rec, ctx.pipelines(), g);
  rec.submit_and_wait();
  const std::vector<float> got_clamp = vk::download<float>(ctx.device(), clamped.slice(), n);
  const std::vector<float> got_glu = vk::download<float>(ctx.device(), glu.slice(), n);
  double worst = 0;
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(got_clamp[i], std::clamp(a[i], -1.5f, 2.25f)) << i;
    const double want = a[i] / (1.0 + std::exp(-1.702 * a[i])) * b[i];
    worst = std::max(worst, std::fabs(want - got_glu[i]));
  }
  EXPECT_LT(worst, 1e-5);  // GPU exp
}

}  // namespace
}  // namespace vkllm::vision
