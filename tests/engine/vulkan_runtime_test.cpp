// The Vulkan runtime itself: device bring-up, arenas, transfers, pipelines, recording.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "tests/engine/vk_test_context.h"

namespace vkllm::vk {
namespace {

using test::vk_context;

struct FillPush {
  uint32_t n;
  float value;
};

const Pipeline& fill_pipeline(uint32_t workgroup) {
  return vk_context().pipelines().get({.shader = "fill",
                                       .num_buffers = 1,
                                       .push_constant_bytes = sizeof(FillPush),
                                       .spec = {workgroup}});
}

TEST(VulkanRuntime, DeviceReportsUsableCapabilities) {
  const auto& caps = vk_context().caps();
  EXPECT_FALSE(caps.name.empty());
  EXPECT_TRUE(caps.storage_16bit);
  EXPECT_GE(caps.subgroup_size, 1u);
  EXPECT_LE(caps.min_subgroup_size, caps.subgroup_size);
  EXPECT_GE(caps.max_subgroup_size, caps.subgroup_size);
  EXPECT_GE(caps.max_shared_memory, 16384u);  // Vulkan's guaranteed minimum
  EXPECT_GE(caps.max_workgroup_invocations, 128u);
  EXPECT_GE(caps.max_push_constants, 128u);
  EXPECT_GT(caps.storage_buffer_alignment, 0u);
  EXPECT_NE(caps.summary().find(caps.name), std::string::npos);
}

TEST(VulkanRuntime, SelectorThatMatchesNothingNamesTheDevices) {
  DeviceOptions o;
  o.selector = "no-such-gpu-xyz";
  o.log_summary = false;
  try {
    Device d(o);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-gpu-xyz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(vk_context().caps().name), std::string::npos) << e.what();
  }
}

TEST(VulkanRuntime, FillWritesExactlyItsRangeForSizesOffWorkgroupMultiples) {
  test::SeededRng rng;
  Device& dev = vk_context().device();
  Arena arena(dev, "test", 1 << 20);
  for (uint32_t n : {1u, 63u, 64u, 65u, 1000u + rng.below(1000)}) {
    const uint32_t pad = 16;
    BufferSlice all = arena.allocate((n + 2 * pad) * sizeof(float));
    std::vector<float> sentinel(n + 2 * pad, -7.0f);
    upload(dev, all, std::span<const float>(sentinel));
    const float value = rng.uniform(-10.f, 10.f);
    CommandRecorder rec(dev);
    rec.begin();
    rec.dispatch(fill_pipeline(64), {all.sub(pad * sizeof(float), n * sizeof(float))},
                 FillPush{n, value}, {div_up(n, 64)});
    rec.submit_and_wait();
    auto out = download<float>(dev, all, n + 2 * pad);
    for (uint32_t i = 0; i < n + 2 * pad; ++i)
      ASSERT_EQ(out[i], (i >= pad && i < pad + n) ? value : -7.0f) << "n=" << n << " i=" << i;
  }
}

TEST(VulkanRuntime, BarrierOrdersDependentDispatchesAndCopies) {
  Device& dev = vk_context().device();
  Buffer a(dev, 4096, MemoryKind::DeviceLocal, "a");
  Buffer b(dev, 4096, MemoryKind::DeviceLocal, "b");
  CommandRecorder rec(dev);
  rec.begin();
  rec.timestamp("start");
  rec.dispatch(fill_pipeline(32), {a.slice()}, FillPush{1024, 1.0f}, {32});
  rec.barrier();
  rec.copy(a.slice(0, 2048), b.slice(0, 2048));
  rec.fill(b.slice(2048, 2048), 0x40000000u);  // 2.0f
  rec.barrier();
  rec.dispatch(fill_pipeline(32), {a.slice(0, 1024)}, FillPush{256, 3.0f}, {8});
  rec.timestamp("end");
  rec.submit_and_wait();
  EXPECT_EQ(rec.dispatch_count(), 2u);
  auto av = download<float>(dev, a.slice(), 1024);
  auto bv = download<float>(dev, b.slice(), 1024);
  for (int i = 0; i < 1024; ++i) {
    ASSERT_EQ(av[i], i < 256 ? 3.0f : 1.0f) << i;
    ASSERT_EQ(bv[i], i < 512 ? 1.0f : 2.0f) << i;
  }
  auto t = rec.timings();
  if (vk_context().caps().timestamps) {
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].label, "start");
    EXPECT_GE(t[1].ms, t[0].ms);
  }
  // The recorder is reusable.
  rec.begin();
  rec.dispatch(fill_pipeline(32), {b.slice()}, FillPush{1024, 5.0f}, {32});
  rec.submit_and_wait();
  EXPECT_EQ(download<float>(dev, b.slice(), 1024)[1023], 5.0f);
}

TEST(VulkanRuntime, FlushedPartsStayOrderedAndAbandonedRecordingsAreWaitedFor) {
  Device& dev = vk_context().device();
  Buffer a(dev, 4096, MemoryKind::DeviceLocal, "a");
  Buffer b(dev, 4096, MemoryKind::DeviceLocal, "b");
  CommandRecorder rec(dev);
  for (int round = 0; round < 3; ++round) {  // later rounds reuse the parts allocated before
    const float v = 1.0f + round;
    rec.begin();
    rec.timestamp("start");
    rec.dispatch(fill_pipeline(32), {a.slice()}, FillPush{1024, v}, {32});
    rec.barrier();
    rec.flush();  // part 2 reads what part 1 wrote
    rec.copy(a.slice(0, 2048), b.slice(0, 2048));
    rec.flush();  // part 3 overwrites what part 2 read
    rec.dispatch(fill_pipeline(32), {a.slice(0, 1024)}, FillPush{256, -v}, {8});
    rec.barrier();
    rec.copy(a.slice(0, 1024), b.slice(2048, 1024));
    rec.timestamp("end");
    rec.submit_and_wait();
    auto bv = download<float>(dev, b.slice(), 768);
    for (int i = 0; i < 768; ++i)
      ASSERT_EQ(bv[i], i < 512 ? v : -v) << "round " << round << " " << i;
    if (vk_context().caps().timestamps) {
      auto t = rec.timings();
      ASSERT_EQ(t.size(), 2u);
      EXPECT_GE(t[1].ms, t[0].ms);
    }
  }
  // A recording abandoned after a flush (as after an exception) is waited for by the next one.
  rec.begin();
  rec.dispatch(fill_pipeline(32), {a.slice()}, FillPush{1024, 7.0f}, {32});
  rec.flush();
  rec.begin();
  rec.dispatch(fill_pipeline(32), {b.slice()}, FillPush{1024, 8.0f}, {32});
  rec.submit_and_wait();
  EXPECT_EQ(download<float>(dev, a.slice(), 1024)[1023], 7.0f);
  EXPECT_EQ(download<float>(dev, b.slice(), 1024)[1023], 8.0f);
}

TEST(VulkanRuntime, DispatchRejectsMismatchedArguments) {
  Device& dev = vk_context().device();
  Buffer a(dev, 256, MemoryKind::DeviceLocal);
  CommandRecorder rec(dev);
  rec.begin();
  const Pipeline& p = fill_pipeline(64);
  EXPECT_THROW(rec.dispatch(p, {a.slice()}, uint32_t{1}, {1}), std::invalid_argument);
  EXPECT_THROW(rec.dispatch(p, {a.slice(), a.slice()}, FillPush{1, 0}, {1}), std::invalid_argument);
  if (vk_context().caps().storage_buffer_alignment > 4) {
    EXPECT_THROW(rec.dispatch(p, {a.slice(4, 64)}, FillPush{1, 0}, {1}), std::invalid_argument);
  }
  rec.submit_and_wait();
}

TEST(VulkanRuntime, PipelineCacheBuildsOncePerDescription) {
  auto& cache = vk_context().pipelines();
  const Pipeline& a = fill_pipeline(128);
  const Pipeline& b = fill_pipeline(128);
  const Pipeline& c = fill_pipeline(256);
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_THROW(
      cache.get(
          {.shader = "no_such_shader", .num_buffers = 1, .push_constant_bytes = 0, .spec = {}}),
      std::invalid_argument);
  EXPECT_THROW(
      cache.get({.shader = "fill", .num_buffers = 1, .push_constant_bytes = 6, .spec = {}}),
      std::invalid_argument);
  EXPECT_TRUE(has_shader("fill"));
}

TEST(VulkanRuntime, ArenaAlignsAllocationsAndReportsExhaustion) {
  Device& dev = vk_context().device();
  const VkDeviceSize align = std::max<VkDeviceSize>(dev.caps().storage_buffer_alignment, 16);
  Arena arena(dev, "scratch", 4096, MemoryKind::DeviceLocal, 1024);
  EXPECT_EQ(arena.block_count(), 4u);
  BufferSlice a = arena.allocate(3);
  BufferSlice b = arena.allocate(100);
  EXPECT_EQ(a.offset % align, 0u);
  EXPECT_EQ(b.offset % align, 0u);
  EXPECT_GE(b.offset, a.offset + 3);
  auto mark = arena.mark();
  BufferSlice c = arena.allocate(1000);  // does not fit the rest of block 0: next block
  EXPECT_NE(c.buffer, a.buffer);
  EXPECT_EQ(c.offset, 0u);
  arena.reset(mark);
  BufferSlice c2 = arena.allocate(1000);
  EXPECT_EQ(c2.buffer, c.buffer);
  EXPECT_THROW(arena.allocate(2000), std::invalid_argument);  // above block size
  arena.allocate(1024);
  arena.allocate(1024);
  try {
    arena.allocate(1024);
    FAIL() << "expected exhaustion";
  } catch (const std::length_error& e) {
    EXPECT_NE(std::string(e.what()).find("scratch"), std::string::npos) << e.what();
  }
  arena.reset();
  EXPECT_EQ(arena.used(), 0u);
}

TEST(VulkanRuntime, StagingUploaderStreamsChunksThroughTheRing) {
  test::SeededRng rng;
  Device& dev = vk_context().device();
  // Non-mapped path forced (lavapipe memory is host-visible) with tiny segments so chunks straddle
  // segments and the ring wraps several times.
  StagingUploader up(dev, 1000, 2, /*allow_direct=*/false);
  Buffer dst(dev, 20000, MemoryKind::DeviceLocal);
  std::vector<std::byte> a(7777), b(12000);
  for (auto& x : a) x = std::byte(rng.below(256));
  for (auto& x : b) x = std::byte(rng.below(256));
  up.begin(dst.slice(0, a.size()));
  for (size_t pos = 0; pos < a.size();) {
    size_t n = std::min<size_t>(1 + rng.below(1500), a.size() - pos);
    up.write(std::span(a).subspan(pos, n));
    pos += n;
  }
  up.end();
  up.upload(dst.slice(8000, b.size()), b);
  up.flush();
  std::vector<std::byte> back(20000);
  download(dev, dst.slice(), back);
  EXPECT_EQ(std::memcmp(back.data(), a.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(back.data() + 8000, b.data(), b.size()), 0);
  EXPECT_EQ(up.bytes_uploaded(), a.size() + b.size());

  up.begin(dst.slice(0, 16));
  EXPECT_THROW(up.write(std::span(a).subspan(0, 17)), std::length_error);
  up.write(std::span(a).subspan(0, 8));
  EXPECT_THROW(up.end(), std::length_error);
}

void many_dispatches(Context& ctx) {
  // More sets than one descriptor pool holds, and two recordings so pools are recycled.
  Device& dev = ctx.device();
  const Pipeline& p = ctx.pipelines().get(
      {.shader = "fill", .num_buffers = 1, .push_constant_bytes = sizeof(FillPush), .spec = {16}});
  Buffer a(dev, 64 * 2000, MemoryKind::DeviceLocal);
  CommandRecorder rec(dev);
  for (int round = 0; round < 2; ++round) {
    rec.begin();
    for (uint32_t i = 0; i < 2000; ++i)
      rec.dispatch(p, {a.slice(i * 64, 64)}, FillPush{16, float(i + round)}, {1});
    rec.submit_and_wait();
    auto v = download<float>(dev, a.slice(), 16 * 2000);
    for (uint32_t i = 0; i < 2000; ++i) ASSERT_EQ(v[i * 16 + 15], float(i + round));
  }
}

TEST(VulkanRuntime, ManyDispatchesWithDefaultDescriptors) {
  many_dispatches(vk_context());
}

TEST(VulkanRuntime, ManyDispatchesWithDescriptorPools) {
  DeviceOptions o;
  o.push_descriptors = false;
  Context ctx(o);
  EXPECT_FALSE(ctx.caps().push_descriptors);
  many_dispatches(ctx);
}

}  // namespace
}  // namespace vkllm::vk
