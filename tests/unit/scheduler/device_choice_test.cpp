// VKLLM_DEVICE's grammar and the serving policy: a GPU when there is one, the CPU backend
// otherwise, lavapipe only when Vulkan is asked for; encoders on lavapipe beside the CPU backend.
#include "server/scheduler/device_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace vkllm::sched {
namespace {

using Kind = vk::DeviceRequest::Kind;

vk::PhysicalDeviceInfo dev(uint32_t index, const char* name, VkPhysicalDeviceType type,
                           bool usable = true) {
  return {index, name, type, usable};
}

const auto kLavapipe = dev(0, "llvmpipe (LLVM 15.0.6, 256 bits)", VK_PHYSICAL_DEVICE_TYPE_CPU);

TEST(DeviceRequest, ParsesEveryForm) {
  EXPECT_EQ(vk::DeviceRequest::parse("").kind, Kind::Auto);
  EXPECT_EQ(vk::DeviceRequest::parse(" AUTO ").kind, Kind::Auto);
  EXPECT_EQ(vk::DeviceRequest::parse("cpu").kind, Kind::Cpu);
  EXPECT_EQ(vk::DeviceRequest::parse("CPU").kind, Kind::Cpu);
  auto v = vk::DeviceRequest::parse("vulkan");
  EXPECT_EQ(v.kind, Kind::Vulkan);
  EXPECT_EQ(v.selector, "");
  EXPECT_EQ(v.str(), "vulkan");
  v = vk::DeviceRequest::parse("Vulkan:1");
  EXPECT_EQ(v.kind, Kind::Vulkan);
  EXPECT_EQ(v.selector, "1");
  EXPECT_EQ(v.str(), "vulkan:1");
  // A name keeps its case (names match case-insensitively anyway).
  EXPECT_EQ(vk::DeviceRequest::parse("vulkan:NVIDIA H100").selector, "NVIDIA H100");
  // The bare index or name of earlier versions still selects a Vulkan device.
  v = vk::DeviceRequest::parse("2");
  EXPECT_EQ(v.kind, Kind::Vulkan);
  EXPECT_EQ(v.selector, "2");
  EXPECT_EQ(vk::DeviceRequest::parse("llvmpipe").selector, "llvmpipe");
  EXPECT_THROW(vk::DeviceRequest::parse("vulkan:"), std::invalid_argument);
  EXPECT_TRUE(vk::DeviceRequest::parse("vulkan:1").split.empty());
}

// A list names the devices a model is split across, in order; the same device may come twice.
TEST(DeviceRequest, AListSplitsModelsAcrossItsDevices) {
  auto v = vk::DeviceRequest::parse("0,1");
  EXPECT_EQ(v.kind, Kind::Vulkan);
  EXPECT_EQ(v.split, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(v.selector, "0");
  EXPECT_EQ(v.str(), "vulkan:0,1");
  v = vk::DeviceRequest::parse(" vulkan:1, Vulkan:0 ,llvmpipe");
  EXPECT_EQ(v.split, (std::vector<std::string>{"1", "0", "llvmpipe"}));
  EXPECT_EQ(vk::DeviceRequest::parse(v.str()).split, v.split);
  EXPECT_THROW(vk::DeviceRequest::parse("0,"), std::invalid_argument);
  EXPECT_THROW(vk::DeviceRequest::parse("vulkan:0,,1"), std::invalid_argument);

  const std::vector<vk::PhysicalDeviceInfo> devices{kLavapipe};
  const auto c = choose_device(vk::DeviceRequest::parse("0,0"), devices);
  EXPECT_EQ(c.backend, Backend::Vulkan);
  EXPECT_TRUE(c.split());
  EXPECT_EQ(c.vulkan_options({}, 1).selector, "0");
  EXPECT_NE(c.describe().find("split by layers"), std::string::npos) << c.describe();
  // As Ollama: only a model too large for the first device is split, unless spread.
  EXPECT_TRUE(c.splits(10, 5));
  EXPECT_FALSE(c.splits(5, 10));
  DeviceChoice spread = c;
  spread.spread = true;  // OLLAMA_SCHED_SPREAD
  EXPECT_TRUE(spread.splits(5, 10));
  EXPECT_NE(spread.describe().find("every model split by layers"), std::string::npos)
      << spread.describe();
  spread.by_rows = true;  // VKLLM_SPLIT_MODE=row
  EXPECT_NE(spread.describe().find("every model split by rows"), std::string::npos)
      << spread.describe();
  // A device the driver groups with others says so (the row split's sums could then stay on the
  // devices); lavapipe is a group of one.
  vk::PhysicalDeviceInfo grouped = kLavapipe;
  grouped.group_size = 2;
  EXPECT_NE(choose_device(vk::DeviceRequest::parse("0,0"), std::vector{grouped})
                .describe()
                .find("device group of 2"),
            std::string::npos);
  EXPECT_EQ(c.describe().find("device group"), std::string::npos) << c.describe();
  DeviceChoice one = choose_device(vk::DeviceRequest::parse("0"), devices);
  one.spread = true;
  EXPECT_FALSE(one.splits(10, 5));
}

// Several GPUs of the best kind are the devices a model may be split across (the best one
// first), when it does not fit on the first; lavapipe never counts; one GPU is no split.
TEST(DeviceChoice, SeveralGpusSplitLargeModelsOrEveryOneWithSpread) {
  const std::vector<vk::PhysicalDeviceInfo> two{
      dev(0, kLavapipe.name.c_str(), kLavapipe.type),
      dev(1, "NVIDIA H200", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU),
      dev(2, "Intel UHD", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU),
      dev(3, "NVIDIA H200", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)};
  const auto c = choose_device({}, two);
  EXPECT_EQ(c.vulkan_selector, "1");
  EXPECT_EQ(c.split_selectors, (std::vector<std::string>{"1", "3"}));
  EXPECT_EQ(c.vulkan_options({}, 1).selector, "3");
  EXPECT_FALSE(c.splits(5, 10));
  EXPECT_TRUE(c.splits(10, 5));
  const std::vector<vk::PhysicalDeviceInfo> one{
      dev(0, "NVIDIA H200", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU), kLavapipe};
  DeviceChoice single = choose_device({}, one);
  single.spread = true;
  EXPECT_FALSE(single.split());
  EXPECT_FALSE(single.splits(10, 5));
  EXPECT_EQ(single.vulkan_selector, "0");
}

TEST(DeviceChoice, AGpuServesWhenThereIsOne) {
  const std::vector<vk::PhysicalDeviceInfo> devices{
      kLavapipe, dev(1, "Intel UHD", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU),
      dev(2, "NVIDIA H100", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)};
  const auto c = choose_device({}, devices);
  EXPECT_EQ(c.backend, Backend::Vulkan);
  EXPECT_EQ(c.vulkan_selector, "2");
  EXPECT_NE(c.describe().find("NVIDIA H100"), std::string::npos) << c.describe();
  EXPECT_EQ(c.vulkan_options({}).selector, "2");

  // Integrated and virtual GPUs count; an unusable one does not.
  const std::vector<vk::PhysicalDeviceInfo> laptop{
      kLavapipe, dev(1, "old", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, false),
      dev(2, "Intel UHD", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU)};
  EXPECT_EQ(choose_device({}, laptop).vulkan_selector, "2");
  const std::vector<vk::PhysicalDeviceInfo> vm{
      dev(0, "virtio-gpu", VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU), kLavapipe};
  EXPECT_EQ(choose_device({}, vm).backend, Backend::Vulkan);
}

TEST(DeviceChoice, LavapipeAloneMeansTheCpuBackend) {
  const std::vector<vk::PhysicalDeviceInfo> devices{kLavapipe};
  const auto c = choose_device({}, devices);
  EXPECT_EQ(c.backend, Backend::Cpu);
  EXPECT_NE(c.describe().find("CPU backend"), std::string::npos) << c.describe();
}

TEST(DeviceChoice, NoVulkanAtAllMeansTheCpuBackend) {
  const auto c = choose_device({}, {});
  EXPECT_EQ(c.backend, Backend::Cpu);
  EXPECT_NE(c.describe().find("no Vulkan device"), std::string::npos) << c.describe();
}

TEST(DeviceChoice, VkllmDeviceForcesEitherBackend) {
  const std::vector<vk::PhysicalDeviceInfo> devices{
      dev(0, "NVIDIA H100", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU),
      dev(1, kLavapipe.name.c_str(), kLavapipe.type)};
  const auto cpu = choose_device(vk::DeviceRequest::parse("cpu"), devices);
  EXPECT_EQ(cpu.backend, Backend::Cpu);

  // Forcing Vulkan allows lavapipe (CI's Vulkan tests on a machine without a GPU).
  const std::vector<vk::PhysicalDeviceInfo> lavapipe_only{kLavapipe};
  const auto vulkan = choose_device(vk::DeviceRequest::parse("vulkan"), lavapipe_only);
  EXPECT_EQ(vulkan.backend, Backend::Vulkan);
  EXPECT_EQ(vulkan.vulkan_selector, "");
  const auto one = choose_device(vk::DeviceRequest::parse("vulkan:1"), devices);
  EXPECT_EQ(one.backend, Backend::Vulkan);
  EXPECT_EQ(one.vulkan_selector, "1");
  EXPECT_NE(one.describe().find("VKLLM_DEVICE=vulkan:1"), std::string::npos) << one.describe();
}

}  // namespace
}  // namespace vkllm::sched
