// HostModel: every tensor's bytes equal the file's, whether copied from a stream (forward-only
// reads, aligned copies) or pointed into the mapping; lookups behave as runtime::Model's.
#include "engine/runtime/host_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::runtime {
namespace {

const std::filesystem::path kModels =
    std::filesystem::path(VKLLM_SHARED_DIR) / "testdata" / "models";

// A source over a file's bytes that fails the test if reads go backwards or overlap, as a
// streaming blob reader would not allow them.
class ForwardOnlySource final : public TensorDataSource {
 public:
  explicit ForwardOnlySource(const gguf::GgufFile& file) : inner_(file) {}
  void read(uint64_t offset, std::span<std::byte> out) override {
    EXPECT_GE(offset, next_) << "read went backwards";
    next_ = offset + out.size();
    total_ += out.size();
    inner_.read(offset, out);
  }
  uint64_t total() const { return total_; }

 private:
  GgufFileSource inner_;
  uint64_t next_ = 0;
  uint64_t total_ = 0;
};

enum class Storage { Copied, BorrowedMapping, OwnedMapping };

// Walks every weight the spec says a layer has and compares it with the file's tensor.
void expect_weights_match(const HostModel& m, const gguf::GgufFile& file, Storage storage) {
  std::set<std::string> seen;
  auto check = [&](model::Weight w, uint32_t layer) {
    const HostTensor* ht = m.find(w, layer);
    const gguf::TensorInfo* info = file.find_tensor(model::weight_name(w, layer));
    ASSERT_EQ(ht == nullptr, info == nullptr) << model::weight_name(w, layer);
    if (!ht) return;
    seen.insert(ht->name);
    EXPECT_EQ(ht->name, info->name);
    EXPECT_EQ(ht->type, info->type);
    EXPECT_EQ(ht->shape, info->shape);
    EXPECT_EQ(ht->bytes, info->byte_size);
    EXPECT_EQ(ht->cols(), info->shape[0]);
    EXPECT_EQ(ht->rows(), info->shape.size() > 1 ? info->shape[1] : 1);
    const auto want = file.tensor_data(*info);
    ASSERT_EQ(std::memcmp(ht->data, want.data(), want.size()), 0) << ht->name;
    const auto addr = reinterpret_cast<uintptr_t>(ht->data);
    if (storage == Storage::Copied) {
      EXPECT_EQ(addr % kHostTensorAlign, 0u) << ht->name;
      EXPECT_NE(static_cast<const void*>(ht->data), static_cast<const void*>(want.data()));
    } else if (storage == Storage::BorrowedMapping) {
      EXPECT_EQ(static_cast<const void*>(ht->data), static_cast<const void*>(want.data()))
          << "a mapped model must not copy " << ht->name;
    }
  };
  for (auto w : {model::Weight::TokenEmbd, model::Weight::OutputNorm, model::Weight::Output}) {
    check(w, 0);
  }
  for (uint32_t l = 0; l < m.spec().n_layer; ++l) {
    for (auto w :
         {model::Weight::AttnNorm, model::Weight::AttnQ, model::Weight::AttnK, model::Weight::AttnV,
          model::Weight::AttnOut, model::Weight::FfnNorm, model::Weight::FfnGate,
          model::Weight::FfnUp, model::Weight::FfnDown, model::Weight::AttnQBias}) {
      check(w, l);
    }
  }
  // The walk covered every tensor of these llama files.
  EXPECT_EQ(seen.size(), file.tensors().size());
  uint64_t sum = 0;
  for (const auto& t : file.tensors()) sum += t.byte_size;
  EXPECT_EQ(m.weight_bytes(), sum);
}

class HostModelFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(HostModelFiles, CopiedFromAStreamMatchesTheFileBytes) {
  const auto file = gguf::GgufFile::open(kModels / GetParam());
  // As the server loads: only the header is parsed, the data comes through the source.
  const auto bytes = file.bytes();
  const auto header = gguf::GgufFile::parse_header(bytes.first(file.data_offset()), bytes.size());
  ForwardOnlySource source(file);
  const HostModel m(header, source);
  EXPECT_EQ(m.spec().n_layer, header.get<uint32_t>("llama.block_count"));
  expect_weights_match(m, file, Storage::Copied);
  EXPECT_EQ(source.total(), m.weight_bytes()) << "each tensor byte is read exactly once";
  EXPECT_GE(m.copied_bytes(), m.weight_bytes());
}

TEST_P(HostModelFiles, PointsIntoTheMappingWithoutCopying) {
  const auto file = gguf::GgufFile::open(kModels / GetParam());
  const HostModel m(file, MappedWeights::InPlace);
  expect_weights_match(m, file, Storage::BorrowedMapping);
  EXPECT_EQ(m.copied_bytes(), 0u);
  // These files are far below kCopyMinBytes: Auto leaves them in place too.
  const HostModel automatic(file);
  expect_weights_match(automatic, file, Storage::BorrowedMapping);
  EXPECT_EQ(automatic.copied_bytes(), 0u);
}

TEST_P(HostModelFiles, CopiedFromTheMappingMatchesTheFileBytes) {
  const auto file = gguf::GgufFile::open(kModels / GetParam());
  const HostModel m(file, MappedWeights::Copy);
  expect_weights_match(m, file, Storage::Copied);
  EXPECT_GE(m.copied_bytes(), m.weight_bytes());
  // The mapping still reads the same after the copy dropped its page-table entries.
  const auto again = gguf::GgufFile::open(kModels / GetParam());
  const auto* info = &file.tensors().back();
  const auto a = file.tensor_data(*info), b = again.tensor_data(again.tensors().back());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
}

// An image the caller parsed from its own memory (tests, make-model's fixtures) is copied from
// and left as it was: dropping its pages, as the copy does for a file's mapping, would zero the
// caller's heap under it and every model made from it later.
TEST_P(HostModelFiles, CopyLeavesAParsedImageIntact) {
  const auto mapped = gguf::GgufFile::open(kModels / GetParam());
  const std::vector<uint8_t> image(mapped.bytes().begin(), mapped.bytes().end());
  const auto file = gguf::GgufFile::parse(image);
  EXPECT_TRUE(mapped.file_mapped());
  EXPECT_FALSE(file.file_mapped());
  {
    const HostModel first(file, MappedWeights::Copy);
    expect_weights_match(first, file, Storage::Copied);
  }
  EXPECT_TRUE(std::equal(image.begin(), image.end(), mapped.bytes().begin()))
      << "the copy changed the caller's bytes";
  const HostModel second(file, MappedWeights::Copy);
  expect_weights_match(second, mapped, Storage::Copied);
}

INSTANTIATE_TEST_SUITE_P(RefLlama, HostModelFiles,
                         ::testing::Values("ref-llama-q4_k_m.gguf", "ref-llama-q8_0.gguf",
                                           "ref-llama-f16.gguf"));

// The VmFlags line of the mapping in /proc/self/smaps that holds `p` (empty when not found).
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return {};
}

TEST(HostModel, AMappedModelAsksForHugePages) {
  // Larger than one 2 MiB page, so the advice applies.
  const auto file = gguf::GgufFile::open(kModels / "ref-llama-f16.gguf");
  ASSERT_GE(file.bytes().size(), size_t(2) << 20);
  const HostModel m(file, MappedWeights::InPlace);
  const std::string flags = vm_flags_of(m.get(model::Weight::TokenEmbd).data);
  ASSERT_FALSE(flags.empty()) << "no mapping holds the tensor";
  // "hg": MADV_HUGEPAGE is set on the mapping.
  EXPECT_NE((flags + " ").find(" hg "), std::string::npos) << flags;
}

TEST(HostModel, OwningTheFileKeepsItsMappingAlive) {
  const auto path = kModels / "ref-llama-q8_0.gguf";
  // The GgufFile is a temporary: the model must keep its mapping.
  const HostModel m(gguf::GgufFile::open(path));
  const auto file = gguf::GgufFile::open(path);
  expect_weights_match(m, file, Storage::OwnedMapping);
  EXPECT_EQ(m.copied_bytes(), 0u);
}

TEST(HostModel, MissingWeightsAreNullOrANamedError) {
  const auto file = gguf::GgufFile::open(kModels / "ref-llama-q4_k_m.gguf");
  const HostModel m(file);
  EXPECT_EQ(m.find(model::Weight::AttnQBias, 0), nullptr);
  try {
    m.get(model::Weight::AttnQBias, 1);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.1.attn_q.bias"), std::string::npos) << e.what();
  }
  // Past the last layer.
  EXPECT_EQ(m.find(model::Weight::AttnQ, m.spec().n_layer), nullptr);
  EXPECT_EQ(&m.output(), &m.get(model::Weight::Output));
}

TEST(HostModel, TiedEmbeddingsProjectThroughTheEmbeddingMatrix) {
  gguf::GgufWriter vw;
  vw.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  while (tokens.size() < 300) tokens.push_back("tok" + std::to_string(tokens.size()));
  vw.set_strings("tokenizer.ggml.tokens", tokens);
  vw.set_f32s("tokenizer.ggml.scores", std::vector<float>(tokens.size(), 0.0f));
  const auto vocab_bytes = vw.serialize();
  const auto vocab = gguf::GgufFile::parse(vocab_bytes);

  model::MakeModelOptions o;
  o.arch = "llama";
  o.shape = model::parse_model_shape("tiny");
  o.shape.n_layer = 1;
  o.shape.tied_embeddings = true;
  o.file_type = model::FileType::Q8_0;
  o.threads = 1;
  gguf::GgufWriter w;
  model::build_random_model(o, vocab, w);
  const auto bytes = w.serialize();
  const auto file = gguf::GgufFile::parse(bytes);

  GgufFileSource source(file);
  const HostModel m(file, source);
  ASSERT_TRUE(m.spec().tied_embeddings);
  EXPECT_EQ(m.find(model::Weight::Output), nullptr);
  EXPECT_EQ(&m.output(), &m.get(model::Weight::TokenEmbd));
  EXPECT_EQ(m.output().rows(), 300u);
  expect_weights_match(m, file, Storage::Copied);
}

TEST(HostModel, AHeaderOnlyFileCannotBeMapped) {
  const auto file = gguf::GgufFile::open(kModels / "ref-llama-q4_k_m.gguf");
  const auto bytes = file.bytes();
  const auto header = gguf::GgufFile::parse_header(bytes.first(file.data_offset()), bytes.size());
  EXPECT_THROW(HostModel{header}, std::invalid_argument);
}

}  // namespace
}  // namespace vkllm::runtime
