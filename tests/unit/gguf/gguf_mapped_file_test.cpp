// Opening files: the mapping and descriptor are released, and OS-level failures read clearly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf {
namespace {

namespace fs = std::filesystem;
const fs::path kModel = VKLLM_SHARED_DIR "/testdata/models/llama-2-tiny-random.gguf";

size_t mappings_of(const fs::path& file) {
  std::ifstream maps("/proc/self/maps");
  const std::string name = fs::canonical(file).string();
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(name) != std::string::npos;
  return n;
}

size_t open_descriptor_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

std::string error_of(const fs::path& p) {
  try {
    GgufFile::open(p);
  } catch (const GgufError& e) {
    return e.what();
  }
  return "no error";
}

TEST(GgufOpen, ReleasesDescriptorsAndMappings) {
  const size_t before = open_descriptor_count();
  for (int i = 0; i < 5; ++i) {
    auto f = GgufFile::open(kModel);
    EXPECT_EQ(mappings_of(kModel), 1u);
    auto moved = std::move(f);
    ASSERT_EQ(moved.get<std::string>("general.architecture"), "llama");
  }
  EXPECT_EQ(mappings_of(kModel), 0u);
  for (int i = 0; i < 5; ++i) EXPECT_THROW(GgufFile::open(VKLLM_SHARED_DIR), GgufError);
  EXPECT_EQ(open_descriptor_count(), before);
}

TEST(GgufOpen, TensorDataStaysValidAfterMove) {
  auto f = GgufFile::open(kModel);
  const TensorInfo* t = f.find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  auto span = f.tensor_data(*t);
  GgufFile g = std::move(f);
  EXPECT_EQ(g.tensor_data(*g.find_tensor("token_embd.weight")).data(), span.data());
}

TEST(GgufOpen, OsFailuresNameThePath) {
  const fs::path dir =
      fs::temp_directory_path() / ("vkllm-gguf-open-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  const fs::path empty = dir / "empty.gguf";
  std::ofstream(empty).close();
  EXPECT_NE(error_of(empty).find("empty.gguf: GGUF: magic at byte offset 0"), std::string::npos)
      << error_of(empty);
  EXPECT_NE(error_of(dir).find("not a regular file"), std::string::npos) << error_of(dir);
  EXPECT_NE(error_of(dir / "absent.gguf").find("absent.gguf"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vkllm::gguf
