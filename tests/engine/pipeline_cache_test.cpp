// Cold start: Runner::warm_up leaves nothing for the first steps to compile, and the on-disk
// VkPipelineCache is used only when it was written for this device and these shaders; a
// corrupted, truncated or foreign file is ignored and the engine still computes the reference's
// logits.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/generator.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/context.h"
#include "engine/vulkan/pipeline_cache_file.h"
#include "tests/reference/llama_cpp_reference.h"
#include "tests/reference/reference_forward.h"

namespace vkllm::runtime {
namespace {

namespace fs = std::filesystem;
using reference::cosine;

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto b = std::as_bytes(std::span(c));
  return {b.begin(), b.end()};
}

void write_bytes(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

struct TempDir {
  fs::path path = fs::temp_directory_path() /
                  ("vkllm-pipeline-cache-" + std::to_string(std::random_device{}()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const gguf::GgufFile& model_file() {
  static const auto file =
      gguf::GgufFile::open(reference::shared_testdata_dir() / "models/ref-llama-q4_k_m.gguf");
  return file;
}

RunnerOptions small_options() {
  RunnerOptions o;
  o.max_batch_tokens = 32;
  o.max_seqs = 4;
  o.max_context = 128;
  o.kv_budget_bytes = 4u << 20;
  o.warm_up = true;
  return o;
}

// A fresh device + pipeline cache on `dir`, a model and a warmed-up Runner; checks the logits
// of a random prompt (two chunks) and a few decode steps against the scalar reference.
struct Engine {
  vk::Context ctx;
  Model model;
  Runner runner;
  explicit Engine(const fs::path& dir)
      : ctx(vk::DeviceOptions{}, vk::PipelineCacheOptions{dir}),
        model(ctx, model_file()),
        runner(model, small_options()) {}

  void expect_matches_reference(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> token(3, int32_t(model.spec().n_vocab) - 1);
    std::vector<int32_t> prompt(40);
    for (auto& t : prompt) t = token(rng);
    reference::ReferenceModel ref(model_file());
    Generator gen(runner);
    std::vector<float> got = gen.feed(prompt);
    auto want = ref.forward(prompt, /*all_rows=*/false).back();
    EXPECT_GE(cosine(got, want), 0.999) << "after the prompt";
    for (int i = 0; i < 3; ++i) {
      const int32_t next = token(rng);
      got = gen.feed(std::span(&next, 1));
      want = ref.forward(std::span(&next, 1), false).back();
      EXPECT_GE(cosine(got, want), 0.999) << "decode step " << i;
    }
  }
};

TEST(PipelineCacheFile, AcceptsItsOwnFileAndRejectsDamagedOrForeignOnes) {
  vk::PipelineCacheKey key;
  key.vendor_id = 0x10de;
  key.device_id = 0x2335;
  key.driver_version = 0x22334455;
  for (size_t i = 0; i < 16; ++i) key.cache_uuid[i] = uint8_t(i * 7 + 1);
  key.spirv_hash = vk::embedded_spirv_hash();
  std::vector<std::byte> payload(32 + 100);
  const uint32_t header[4] = {32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, key.vendor_id,
                              key.device_id};
  std::memcpy(payload.data(), header, sizeof header);
  std::memcpy(payload.data() + 16, key.cache_uuid.data(), 16);
  for (size_t i = 32; i < payload.size(); ++i) payload[i] = std::byte(i);
  const auto file = vk::encode_pipeline_cache_file(key, payload);

  auto ok = vk::decode_pipeline_cache_file(key, file);
  EXPECT_EQ(ok.rejected, "");
  EXPECT_EQ(ok.vulkan_data, payload);

  auto rejected = [&](std::span<const std::byte> bytes, const vk::PipelineCacheKey& k) {
    auto d = vk::decode_pipeline_cache_file(k, bytes);
    EXPECT_TRUE(d.vulkan_data.empty());
    return d.rejected;
  };
  EXPECT_NE(rejected(std::span(file).first(file.size() - 1), key), "");  // truncated
  EXPECT_NE(rejected(std::span(file).first(10), key), "");
  EXPECT_NE(rejected({}, key), "");
  auto flipped = file;
  flipped[file.size() - 5] ^= std::byte{1};
  EXPECT_EQ(rejected(flipped, key), "checksum mismatch");
  for (auto change : {+[](vk::PipelineCacheKey& k) { ++k.vendor_id; },
                      +[](vk::PipelineCacheKey& k) { ++k.device_id; },
                      +[](vk::PipelineCacheKey& k) { ++k.driver_version; },
                      +[](vk::PipelineCacheKey& k) { k.cache_uuid[3] ^= 1; }}) {
    auto other = key;
    change(other);
    EXPECT_EQ(rejected(file, other), "made for another device or driver");
    EXPECT_NE(other.file_name(), key.file_name());
  }
  auto other_shaders = key;
  ++other_shaders.spirv_hash;
  EXPECT_EQ(rejected(file, other_shaders), "made for other shaders");

  // A wrapper written for this device around a driver blob of another device (or a damaged
  // Vulkan header) never reaches the driver.
  auto foreign = payload;
  foreign[8] ^= std::byte{1};  // vendorID
  EXPECT_EQ(rejected(vk::encode_pipeline_cache_file(key, foreign), key),
            "Vulkan header names another device");
  foreign = payload;
  foreign[20] ^= std::byte{1};  // UUID
  EXPECT_EQ(rejected(vk::encode_pipeline_cache_file(key, foreign), key),
            "Vulkan header names another pipelineCacheUUID");
  foreign = payload;
  foreign[4] = std::byte{2};  // header version
  EXPECT_NE(rejected(vk::encode_pipeline_cache_file(key, foreign), key), "");
  foreign = payload;
  foreign[0] = std::byte{200};  // header length past the data
  foreign[1] = std::byte{1};
  EXPECT_NE(rejected(vk::encode_pipeline_cache_file(key, foreign), key), "");
}

TEST(PipelineWarmUp, FirstStepsAfterWarmUpCreateNoPipeline) {
  Engine e{fs::path()};
  const auto warm = e.ctx.pipelines().stats();
  EXPECT_GT(warm.created, 0u);
  EXPECT_EQ(warm.disk, "off");
  e.expect_matches_reference(std::random_device{}());
  // Batched steps of other shapes: a full chunk, prefill chunks beside decodes, greedy only.
  const std::vector<int32_t> tokens(32, 7);
  std::vector<kv::BlockTable> tables;
  for (int i = 0; i < 4; ++i) tables.emplace_back(e.runner.pool(), e.runner.block_size());
  SequenceStep full{&tables[0], tokens, LogitsWanted::Last};
  e.runner.step(std::span(&full, 1));
  for (int round = 0; round < 3; ++round) {
    std::vector<SequenceStep> batch;
    for (uint32_t i = 0; i < 4; ++i) {
      const uint32_t n = round == 0 && i > 0 ? 2 * i + 1 : 1;
      batch.push_back({&tables[i], std::span(tokens).first(n),
                       i % 2 ? LogitsWanted::Last : LogitsWanted::None});
    }
    e.runner.step(batch, /*greedy_only=*/round == 2);
  }
  EXPECT_EQ(e.ctx.pipelines().stats().created, warm.created);
}

TEST(PipelineDiskCache, SecondStartLoadsTheCacheAndDamagedOrForeignFilesAreIgnored) {
  TempDir dir;
  fs::path file;
  uint64_t first_created = 0;
  {
    Engine first(dir.path);
    const auto s = first.ctx.pipelines().stats();
    EXPECT_EQ(s.disk, "absent");
    first_created = s.created;
    file = s.file;
    ASSERT_TRUE(fs::exists(file)) << "warm_up saves the cache";
    EXPECT_EQ(s.file.parent_path(), dir.path);
  }
  const auto good = read_bytes(file);
  for (const auto& f : fs::directory_iterator(dir.path))
    EXPECT_EQ(f.path(), file) << "no temp files are left behind";
  {
    Engine second(dir.path);
    const auto s = second.ctx.pipelines().stats();
    EXPECT_EQ(s.disk, "loaded");
    EXPECT_EQ(s.loaded_bytes + 64, good.size());
    EXPECT_EQ(s.created, first_created);
    // Drivers that report creation feedback say where each pipeline came from; lavapipe
    // (Mesa 22) keeps no compiled code in its VkPipelineCache, so it reports no hits.
    if (s.cache_hits > 0) {
      EXPECT_EQ(s.cache_hits, s.created);
    }
    std::cerr << "[          ] second start: " << s.created << " pipelines, " << s.cache_hits
              << " cache hits, " << s.create_ms << " ms (feedback " << (s.feedback ? "on" : "off")
              << ")\n";
    second.expect_matches_reference(std::random_device{}());
  }

  struct Damage {
    std::string what;
    std::vector<std::byte> bytes;
  };
  std::vector<Damage> damaged;
  auto flipped = good;
  flipped[good.size() - 3] ^= std::byte{0x40};  // in the driver's data
  damaged.push_back({"checksum mismatch", flipped});
  damaged.push_back({"truncated or extended", std::vector(good.begin(), good.end() - 3)});
  damaged.push_back({"shorter than its header", std::vector(good.begin(), good.begin() + 20)});
  // Another device's driver data inside a wrapper that claims this device.
  std::vector<std::byte> payload(good.begin() + 64, good.end());
  payload[12] ^= std::byte{0xff};  // deviceID
  vk::PipelineCacheKey key;
  std::memcpy(&key.vendor_id, good.data() + 12, 4);
  std::memcpy(&key.device_id, good.data() + 16, 4);
  std::memcpy(&key.driver_version, good.data() + 20, 4);
  std::memcpy(key.cache_uuid.data(), good.data() + 24, 16);
  key.spirv_hash = vk::embedded_spirv_hash();
  ASSERT_EQ(vk::encode_pipeline_cache_file(key, std::span(good).subspan(64)), good);
  damaged.push_back(
      {"Vulkan header names another device", vk::encode_pipeline_cache_file(key, payload)});
  for (size_t i = 0; i < damaged.size(); ++i) {
    SCOPED_TRACE(damaged[i].what);
    write_bytes(file, damaged[i].bytes);
    Engine e(dir.path);
    EXPECT_EQ(e.ctx.pipelines().stats().disk, "ignored: " + damaged[i].what);
    EXPECT_EQ(e.ctx.pipelines().stats().loaded_bytes, 0u);
    // Only one damaged start needs the full comparison; the rest run the same code.
    if (i == 0 || i + 1 == damaged.size()) e.expect_matches_reference(std::random_device{}());
    EXPECT_EQ(vk::read_pipeline_cache_file(key, file).rejected, "")
        << "a fresh cache replaced the damaged one";
  }
}

}  // namespace
}  // namespace vkllm::runtime
