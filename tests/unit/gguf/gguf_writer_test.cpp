#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vkllm::gguf {
namespace {

namespace fs = std::filesystem;
const fs::path kWriterShared = VKLLM_SHARED_DIR "/testdata";

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// Deep equality of metadata values, including nested arrays.
bool same_value(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  if (a.type() != ValueType::ARRAY) return a.v == b.v;
  const auto& x = *std::get<std::shared_ptr<Array>>(a.v);
  const auto& y = *std::get<std::shared_ptr<Array>>(b.v);
  if (x.element_type != y.element_type || x.items.size() != y.items.size()) return false;
  for (size_t i = 0; i < x.items.size(); ++i) {
    if (!same_value(x.items[i], y.items[i])) return false;
  }
  return true;
}

void expect_same_file_content(const GgufFile& a, const GgufFile& b) {
  EXPECT_EQ(a.metadata_keys(), b.metadata_keys());
  for (auto key : a.metadata_keys()) {
    ASSERT_TRUE(b.has(key)) << key;
    EXPECT_TRUE(same_value(*a.find(key), *b.find(key))) << key;
  }
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo& x = a.tensors()[i];
    const TensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.shape, y.shape);
    auto dx = a.tensor_data(x);
    auto dy = b.tensor_data(y);
    ASSERT_EQ(dx.size(), dy.size());
    EXPECT_EQ(std::memcmp(dx.data(), dy.data(), dx.size()), 0) << x.name;
  }
}

Value nested_array() {
  auto inner1 =
      std::make_shared<Array>(Array{ValueType::I16, {Value{int16_t{-3}}, Value{int16_t{7}}}});
  auto inner2 = std::make_shared<Array>(Array{ValueType::I16, {}});
  return Value{std::make_shared<Array>(Array{ValueType::ARRAY, {Value{inner1}, Value{inner2}}})};
}

TEST(GgufWriter, RoundTripsEveryValueTypeAndTensors) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);

  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set("u8", Value{uint8_t{200}});
  w.set("i8", Value{int8_t{-100}});
  w.set("u16", Value{uint16_t{60000}});
  w.set("i16", Value{int16_t{-30000}});
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_f32("f32", 1.5f);
  w.set_bool("bool", true);
  w.set_u64("u64", 1ull << 60);
  w.set("i64", Value{int64_t{-(1ll << 60)}});
  w.set("f64", Value{3.25});
  w.set_strings("strings", {"a", "", std::string("nul \0 inside", 13), "ünïcode"});
  w.set_f32s("floats", {0.5f, -2.0f});
  w.set_i32s("ints", {1, -1, 1 << 30});
  w.set("nested", nested_array());

  w.add_tensor("a", TensorType::F32, {3, 2}, random_bytes(rng, 24));
  w.add_tensor("b", TensorType::Q4_K, {256, 3}, random_bytes(rng, 3 * 144));
  w.add_tensor("c", TensorType::Q8_0, {64, 1, 2, 2}, random_bytes(rng, 8 * 34));
  const auto image = w.serialize();
  auto f = GgufFile::parse(image);

  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(f.get<uint8_t>("u8"), 200);
  EXPECT_EQ(f.get<int8_t>("i8"), -100);
  EXPECT_EQ(f.get<uint16_t>("u16"), 60000);
  EXPECT_EQ(f.get<int16_t>("i16"), -30000);
  EXPECT_EQ(f.get<uint32_t>("u32"), 4000000000u);
  EXPECT_EQ(f.get<int32_t>("i32"), -2000000000);
  EXPECT_EQ(f.get<float>("f32"), 1.5f);
  EXPECT_EQ(f.get<bool>("bool"), true);
  EXPECT_EQ(f.get<uint64_t>("u64"), 1ull << 60);
  EXPECT_EQ(f.get<int64_t>("i64"), -(1ll << 60));
  EXPECT_EQ(f.get<double>("f64"), 3.25);
  EXPECT_EQ(f.get_array<std::string>("strings"),
            (std::vector<std::string>{"a", "", std::string("nul \0 inside", 13), "ünïcode"}));
  EXPECT_EQ(f.get_array<float>("floats"), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(f.get_array<int32_t>("ints"), (std::vector<int32_t>{1, -1, 1 << 30}));
  EXPECT_TRUE(same_value(*f.find("nested"), nested_array()));
  // Metadata comes back in insertion order.
  ASSERT_EQ(f.metadata_keys().size(), 16u);
  EXPECT_EQ(f.metadata_keys()[0], "general.architecture");
  EXPECT_EQ(f.metadata_keys()[15], "nested");

  ASSERT_EQ(f.tensors().size(), 3u);
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    EXPECT_EQ((f.data_offset() + t.offset) % 32, 0u) << t.name;
  }
  EXPECT_EQ(f.tensors()[1].shape, (std::vector<uint64_t>{256, 3}));
  EXPECT_EQ(f.tensors()[2].type, TensorType::Q8_0);
  // Re-serialising what we read gives the same bytes.
  GgufWriter again;
  again.copy_metadata(f, "");
  for (const auto& t : f.tensors()) {
    auto d = f.tensor_data(t);
    again.add_tensor(t.name, t.type, t.shape, {d.begin(), d.end()});
  }
  EXPECT_EQ(again.serialize(), image);
}

TEST(GgufWriter, CustomAlignmentPadsWithZeros) {
  GgufWriter w;
  w.set_alignment(64);
  w.add_tensor("x", TensorType::F32, {5}, std::vector<uint8_t>(20, 0xAB));
  w.add_tensor("y", TensorType::I8, {3}, std::vector<uint8_t>(3, 0xCD));
  const auto image = w.serialize();
  auto f = GgufFile::parse(image);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get<uint32_t>("general.alignment"), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.find_tensor("y")->offset, 64u);
  EXPECT_EQ(image.size() % 64, 0u);
  // Everything between tensors and after the last one is zero padding.
  for (size_t i = f.data_offset() + 20; i < f.data_offset() + 64; ++i) EXPECT_EQ(image[i], 0);
  for (size_t i = f.data_offset() + 67; i < image.size(); ++i) EXPECT_EQ(image[i], 0);
  // However it is set, general.alignment is stored as the u32 that llama.cpp requires.
  GgufWriter u64;
  u64.set_u64("general.alignment", 16);
  EXPECT_EQ(u64.alignment(), 16u);
  EXPECT_EQ(GgufFile::parse(u64.serialize()).find("general.alignment")->type(), ValueType::U32);
  EXPECT_THROW(u64.set_u64("general.alignment", 1ull << 33), std::invalid_argument);
  EXPECT_EQ(u64.alignment(), 16u);  // a rejected value changes nothing
  EXPECT_THROW(w.set_alignment(48), std::invalid_argument);
  EXPECT_THROW(w.set_alignment(0), std::invalid_argument);
}

TEST(GgufWriter, RejectsInconsistentTensors) {
  GgufWriter w;
  EXPECT_THROW(w.add_tensor("bad", TensorType::F32, {4}, std::vector<uint8_t>(15)),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor("bad", TensorType::Q4_0, {16}, std::vector<uint8_t>(9)),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor("bad", TensorType::F32, {}, {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("bad", TensorType::F32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor("bad", TensorType::F32, {0}, {}), std::invalid_argument);
  EXPECT_THROW(w.add_tensor("", TensorType::F32, {1}, std::vector<uint8_t>(4)),
               std::invalid_argument);
  EXPECT_THROW(w.add_tensor(std::string(64, 'x'), TensorType::F32, {1}, std::vector<uint8_t>(4)),
               std::invalid_argument);
  w.add_tensor(std::string(63, 'x'), TensorType::F32, {1}, std::vector<uint8_t>(4));
  w.add_tensor("ok", TensorType::F32, {1}, std::vector<uint8_t>(4));
  EXPECT_THROW(w.add_tensor("ok", TensorType::F32, {1}, std::vector<uint8_t>(4)),
               std::invalid_argument);
}

TEST(GgufWriter, SettingAKeyTwiceReplacesItInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "x");
  auto f = GgufFile::parse(w.serialize());
  EXPECT_EQ(f.metadata_keys(), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(f.get<std::string>("a"), "x");
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("vkllm-gguf-test-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(GgufWriter, WriteLeavesOnlyTheFinishedFile) {
  TempDir dir;
  GgufWriter w;
  w.set_string("general.name", "t");
  w.add_tensor("t", TensorType::F16, {4}, std::vector<uint8_t>(8, 1));
  const fs::path out = dir.path() / "m.gguf";
  w.write(out);
  w.write(out);  // overwriting works too
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir.path())) entries.push_back(e.path());
  EXPECT_EQ(entries, std::vector<fs::path>{out});
  auto f = GgufFile::open(out);
  std::ifstream in(out, std::ios::binary);
  std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(on_disk, w.serialize());
  EXPECT_THROW(w.write(dir.path() / "missing-dir" / "m.gguf"), std::system_error);
}

TEST(GgufWriter, ReserialisedRealVocabParsesIdentically) {
  for (const char* name : {"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-gpt-2.gguf",
                           "models/llama-2-tiny-random.gguf"}) {
    SCOPED_TRACE(name);
    auto src = GgufFile::open(kWriterShared / name);
    GgufWriter w;
    w.copy_metadata(src, "");
    for (const auto& t : src.tensors()) {
      auto d = src.tensor_data(t);
      w.add_tensor(t.name, t.type, t.shape, {d.begin(), d.end()});
    }
    const auto image = w.serialize();
    auto copy = GgufFile::parse(image);
    expect_same_file_content(src, copy);
  }
}

TEST(GgufWriter, CopyMetadataFiltersByPrefix) {
  auto src = GgufFile::open(kWriterShared / "vocab/ggml-vocab-llama-spm.gguf");
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.copy_metadata(src, "tokenizer.");
  auto f = GgufFile::parse(w.serialize());
  EXPECT_EQ(f.get<std::string>("general.architecture"), "llama");
  size_t tokenizer_keys = 0;
  for (auto k : src.metadata_keys()) tokenizer_keys += k.starts_with("tokenizer.");
  EXPECT_EQ(f.metadata().size(), tokenizer_keys + 1);
  EXPECT_EQ(f.get_array<std::string>("tokenizer.ggml.tokens"),
            src.get_array<std::string>("tokenizer.ggml.tokens"));
}

}  // namespace
}  // namespace vkllm::gguf
