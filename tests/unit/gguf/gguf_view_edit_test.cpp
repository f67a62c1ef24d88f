// GgufFile's in-memory view edits (used by load-time layout translations) and the rule that
// files llama.cpp's converters wrote are never translated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace vkllm::gguf {
namespace {

namespace fs = std::filesystem;
const fs::path kViewEditShared = VKLLM_SHARED_DIR "/testdata";

std::vector<uint8_t> small_file() {
  GgufWriter w;
  w.set_string("general.architecture", "test");
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.add_tensor("x.weight", TensorType::F32, {2}, std::vector<uint8_t>(8, 1));
  w.add_tensor("y.weight", TensorType::F32, {3}, std::vector<uint8_t>(12, 2));
  w.add_tensor("z.weight", TensorType::F32, {1}, std::vector<uint8_t>(4, 3));
  return w.serialize();
}

TEST(GgufViewEdit, KeysAndTensorsChangeInTheViewOnly) {
  const auto bytes = small_file();
  GgufFile f = GgufFile::parse(bytes);
  f.set_value("c", Value{3.5f});
  f.set_value("a", Value{uint32_t{10}});  // replaced in place
  f.erase_key("b");
  f.erase_key("missing");
  EXPECT_EQ(f.metadata_keys(), (std::vector<std::string_view>{"general.architecture", "a", "c"}));
  EXPECT_EQ(f.get<uint32_t>("a"), 10u);
  EXPECT_EQ(f.get<float>("c"), 3.5f);

  const auto y_bytes = f.tensor_data(*f.find_tensor("y.weight"));
  f.hide_tensor("x.weight");
  f.rename_tensor("y.weight", "renamed.weight");
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_FALSE(f.find_tensor("x.weight"));
  EXPECT_FALSE(f.find_tensor("y.weight"));
  const TensorInfo* renamed = f.find_tensor("renamed.weight");
  ASSERT_TRUE(renamed);
  EXPECT_EQ(f.tensor_data(*renamed).data(), y_bytes.data()) << "the data stays where it is";
  EXPECT_EQ(f.find_tensor("z.weight")->shape, std::vector<uint64_t>{1});
  EXPECT_THROW(f.rename_tensor("renamed.weight", "z.weight"), GgufError);
  EXPECT_FALSE(f.translation().applied());
  // The bytes were never touched: a fresh read sees the file as written.
  EXPECT_EQ(GgufFile::parse(bytes).tensors().size(), 3u);
}

// The markers must not fire on what llama.cpp's converters wrote: every shared model and vocab.
TEST(GgufViewEdit, LlamaCppConverterFilesAreNotTranslated) {
  int count = 0;
  for (const auto* dir : {"models", "vocab"}) {
    for (const auto& entry : fs::directory_iterator(kViewEditShared / dir)) {
      if (entry.path().extension() != ".gguf") continue;
      SCOPED_TRACE(entry.path().string());
      const GgufFile f = GgufFile::open(entry.path());
      EXPECT_FALSE(f.translation().applied()) << f.translation().name;
      EXPECT_EQ(f.metadata().size(),
                GgufFile::open(entry.path(), ReadLayout::Raw).metadata().size());
      ++count;
    }
  }
  EXPECT_GE(count, 15);
}

// Stacked gate|up experts (GgufWriter::stack_tensors, split_stacked_experts): written expert by
// expert, gate rows then up rows; read as the two strided views. A stacked tensor of odd rows, or
// beside a split half of its layer, is refused.
TEST(GgufViewEdit, StackedExpertsAreReadAsStridedHalves) {
  const auto experts = [](GgufWriter& w, const std::string& part, uint8_t base) {
    std::vector<uint8_t> d(2 * 3 * 4 * 4);  // [2 cols, 3 rows, 4 experts] F32
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(base + i / 8);
    w.add_tensor("blk.0." + part + ".weight", TensorType::F32, {2, 3, 4}, d);
  };
  GgufWriter w;
  w.set_string("general.architecture", "test");
  experts(w, "ffn_gate_exps", 0);
  experts(w, "ffn_up_exps", 100);
  w.stack_tensors("blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight",
                  "blk.0.ffn_gate_up_exps.weight");
  const auto bytes = w.serialize();
  const GgufFile raw = GgufFile::parse(bytes, ReadLayout::Raw);
  ASSERT_EQ(raw.tensors().size(), 1u);
  EXPECT_EQ(raw.tensors()[0].shape, (std::vector<uint64_t>{2, 6, 4}));
  const auto stacked = raw.tensor_data(raw.tensors()[0]);
  EXPECT_EQ(stacked[24], 100) << "expert 0's up rows follow its 3 gate rows (24 bytes)";
  EXPECT_EQ(stacked[48], 3) << "then expert 1's gate rows";

  const GgufFile f = GgufFile::parse(bytes);
  ASSERT_EQ(f.tensors().size(), 2u);
  for (const auto& [name, base] :
       {std::pair{"blk.0.ffn_gate_exps.weight", 0}, std::pair{"blk.0.ffn_up_exps.weight", 100}}) {
    const TensorInfo* t = f.find_tensor(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->shape, (std::vector<uint64_t>{2, 3, 4}));
    EXPECT_EQ(t->byte_size, 96u);
    EXPECT_EQ(t->expert_stride, 48u);
    EXPECT_THROW(f.tensor_data(*t), GgufError);
    const auto extent = f.tensor_extent(*t);
    for (uint64_t e = 0; e < 4; ++e)
      EXPECT_EQ(extent[t->expert_skip + e * t->expert_stride], base + 3 * e) << name << e;
  }

  GgufWriter odd;
  odd.set_string("general.architecture", "test");
  odd.add_tensor("blk.0.ffn_gate_up_exps.weight", TensorType::F32, {2, 3, 1},
                 std::vector<uint8_t>(24));
  EXPECT_THROW(GgufFile::parse(odd.serialize()), GgufError);
  GgufWriter both;
  both.set_string("general.architecture", "test");
  both.add_tensor("blk.0.ffn_gate_up_exps.weight", TensorType::F32, {2, 2, 1},
                  std::vector<uint8_t>(16));
  both.add_tensor("blk.0.ffn_up_exps.weight", TensorType::F32, {2, 1, 1}, std::vector<uint8_t>(8));
  EXPECT_THROW(GgufFile::parse(both.serialize()), GgufError);
}

}  // namespace
}  // namespace vkllm::gguf
