// Lazy tensors: data produced at write time must give the same file as eager data.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::gguf {
namespace {

TEST(GgufWriterLazy, LazyTensorsMatchEagerOnesAndFillOnDemand) {
  std::vector<uint8_t> a(3 * 34), b(7 * 4);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(255 - i);

  GgufWriter eager;
  eager.set_u32("x", 5);
  eager.add_tensor("a", TensorType::Q8_0, {32, 3}, a);
  eager.add_tensor("b", TensorType::F32, {7}, b);

  GgufWriter lazy;
  lazy.set_u32("x", 5);
  int calls = 0;
  lazy.add_lazy_tensor("a", TensorType::Q8_0, {32, 3}, [&](std::span<uint8_t> out) {
    ++calls;
    ASSERT_EQ(out.size(), a.size());
    std::copy(a.begin(), a.end(), out.begin());
  });
  lazy.add_tensor("b", TensorType::F32, {7}, b);
  EXPECT_EQ(calls, 0);

  const auto image = lazy.serialize();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(image, eager.serialize());

  const auto path =
      std::filesystem::temp_directory_path() /
      ("vkllm_lazy_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".gguf");
  lazy.write(path);
  EXPECT_EQ(calls, 2);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove(path);
  EXPECT_EQ(on_disk, image);

  const auto parsed = GgufFile::parse(image);
  ASSERT_NE(parsed.find_tensor("a"), nullptr);
  const auto data = parsed.tensor_data(*parsed.find_tensor("a"));
  EXPECT_TRUE(std::equal(data.begin(), data.end(), a.begin(), a.end()));
}

TEST(GgufWriterLazy, RejectsMissingFillerAndBadShapes) {
  GgufWriter w;
  EXPECT_THROW(w.add_lazy_tensor("t", TensorType::F32, {4}, nullptr), std::invalid_argument);
  EXPECT_THROW(w.add_lazy_tensor("t", TensorType::Q4_K, {100, 2}, [](std::span<uint8_t>) {}),
               std::invalid_argument);
  w.add_lazy_tensor("t", TensorType::F32, {4}, [](std::span<uint8_t>) {});
  EXPECT_THROW(w.add_lazy_tensor("t", TensorType::F32, {4}, [](std::span<uint8_t>) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::gguf
