// Helpers behind the model routes: Ollama's number and time formats, Range parsing, and the
// GGUF summary read from stored blobs (raw and zstd, where only the header is decompressed).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"
#include "registry/blob_store.h"
#include "server/api/oci_view.h"
#include "server/api/time_format.h"
#include "server/http/error_reply.h"
#include "server/http/exchange.h"
#include "server/models/gguf_summary.h"

namespace fs = std::filesystem;
using namespace vkllm;

namespace {

TEST(ApiFormat, HumanNumberLikeOllama) {
  EXPECT_EQ(models::human_number(8030261248ull), "8.0B");
  EXPECT_EQ(models::human_number(7000000000ull), "7B");
  EXPECT_EQ(models::human_number(135270000ull), "135.27M");
  EXPECT_EQ(models::human_number(6000000ull), "6M");
  EXPECT_EQ(models::human_number(24576ull), "25K");
  EXPECT_EQ(models::human_number(999ull), "999");
}

TEST(ApiFormat, FileTypeNames) {
  EXPECT_EQ(models::file_type_name(1), "F16");
  EXPECT_EQ(models::file_type_name(7), "Q8_0");
  EXPECT_EQ(models::file_type_name(15), "Q4_K_M");
  EXPECT_EQ(models::file_type_name(32), "BF16");
  EXPECT_EQ(models::file_type_name(1000), "unknown");
}

TEST(ApiFormat, Rfc3339) {
  using namespace std::chrono;
  const system_clock::time_point t =
      system_clock::time_point(seconds(1700000000)) + milliseconds(120);
  EXPECT_EQ(api::rfc3339_utc(t), "2023-11-14T22:13:20.12Z");
  EXPECT_EQ(api::rfc3339_utc(system_clock::time_point(seconds(1700000000))),
            "2023-11-14T22:13:20Z");
  setenv("TZ", "America/Los_Angeles", 1);
  tzset();
  EXPECT_EQ(api::rfc3339_local(t), "2023-11-14T14:13:20.12-08:00");
  unsetenv("TZ");
  tzset();
}

TEST(OciRange, ParsesSingleByteRanges) {
  auto r = api::parse_range("bytes=0-99", 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0u);
  EXPECT_EQ(r->last, 99u);
  r = api::parse_range("bytes=900-", 1000);
  EXPECT_EQ(r->first, 900u);
  EXPECT_EQ(r->last, 999u);
  r = api::parse_range("bytes=-10", 1000);
  EXPECT_EQ(r->first, 990u);
  r = api::parse_range("bytes=990-5000", 1000);
  EXPECT_EQ(r->last, 999u);
  EXPECT_FALSE(api::parse_range("", 1000));
  EXPECT_FALSE(api::parse_range("items=0-1", 1000));
  EXPECT_FALSE(api::parse_range("bytes=5-1", 1000));
  EXPECT_FALSE(api::parse_range("bytes=0-1,4-5", 1000));
  EXPECT_THROW(api::parse_range("bytes=1000-", 1000), http::StatusError);
  EXPECT_THROW(api::parse_range("bytes=-0", 1000), http::StatusError);
}

class GgufSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    root_ = fs::temp_directory_path() / ("vkllm-summary-" + std::to_string(rd()));
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

void expect_matches_file(const models::GgufSummary& s, const fs::path& file) {
  const auto g = gguf::GgufFile::open(file);
  EXPECT_EQ(s.architecture, g.get<std::string>("general.architecture"));
  EXPECT_EQ(s.tensors.size(), g.tensors().size());
  EXPECT_EQ(s.model_info.size(), g.metadata().size() + (g.has("general.parameter_count") ? 0 : 1));
  const auto tokens = g.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_TRUE(s.model_info.contains("tokenizer.ggml.tokens"));
  EXPECT_EQ(s.model_info["tokenizer.ggml.tokens"].size(), tokens.size());
  EXPECT_EQ(s.model_info["tokenizer.ggml.tokens"].back(), tokens.back());
  EXPECT_EQ(s.show_model_info(false)["tokenizer.ggml.tokens"].size(), 0u);
  EXPECT_FALSE(s.show_model_info(false).contains("general.name"));
  EXPECT_EQ(s.context_length, g.get_optional<uint64_t>(s.architecture + ".context_length"));
  EXPECT_EQ(s.capabilities.at(0), "completion");
  const auto d = s.details();
  EXPECT_EQ(d.family, "llama");
  EXPECT_FALSE(d.parameter_size.empty());
  EXPECT_FALSE(s.is_projector());
}

TEST_F(GgufSummaryTest, RawBlob) {
  const fs::path file = fs::path(VKLLM_SHARED_DIR) / "testdata/models/llama-2-tiny-random.gguf";
  registry::BlobStoreOptions raw;
  raw.min_saving = 2.0;  // never worth compressing: stored raw
  registry::BlobStore store(root_, raw);
  const auto info = store.put_file(file);
  ASSERT_EQ(info.encoding, registry::BlobEncoding::raw);
  expect_matches_file(*models::read_gguf_summary(store, info.digest), file);
}

TEST_F(GgufSummaryTest, ZstdBlobReadsOnlyTheHeader) {
  const fs::path file = fs::path(VKLLM_SHARED_DIR) / "testdata/models/ref-llama-q8_0.gguf";
  registry::BlobStoreOptions zstd;
  zstd.min_saving = -1.0;  // always compressed
  zstd.chunk_size = 1 << 20;
  registry::BlobStore store(root_, zstd);
  const auto info = store.put_file(file);
  ASSERT_EQ(info.encoding, registry::BlobEncoding::zstd_seekable);
  const auto s = *models::read_gguf_summary(store, info.digest);
  expect_matches_file(s, file);
  EXPECT_EQ(s.file_type, "Q8_0");
  EXPECT_TRUE(fs::is_empty(store.temp_dir()));  // the sparse header image is gone
}

TEST_F(GgufSummaryTest, NonGgufIs400) {
  registry::BlobStore store(root_);
  const auto info = store.put(std::string_view("definitely not a gguf file"));
  try {
    models::read_gguf_summary(store, info.digest);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_EQ(http::status_error_of(e).status(), 400u);  // what an HTTP client is answered
    EXPECT_NE(std::string(e.what()).find("not in GGUF format"), std::string::npos);
  }
}

// A gemma3 in Ollama's converter layout, compressed so the summary reads it through a sparse
// header image: /api/show sees the translated view (the global rope base filled in, no vision
// capability the text path cannot serve); one that half-matches is a 400 naming what is missing.
std::string ollama_gemma3(bool half_matching) {
  gguf::GgufWriter vocab;
  vocab.set_string("tokenizer.ggml.model", "llama");
  std::vector<std::string> tokens;
  for (int i = 0; i < 64; ++i) tokens.push_back("t" + std::to_string(i));
  vocab.set_strings("tokenizer.ggml.tokens", tokens);
  const auto vocab_bytes = vocab.serialize();
  model::MakeModelOptions o;
  o.arch = "gemma3";
  o.shape = model::parse_model_shape("32x1x2x1");
  o.layout = model::FileLayout::Ollama;
  gguf::GgufWriter w;
  model::build_random_model(o, gguf::GgufFile::parse(vocab_bytes), w);
  if (half_matching) w.set_strings("tokenizer.ggml.tokens", {"t0"});
  const auto bytes = w.serialize();
  return std::string(bytes.begin(), bytes.end());
}

TEST_F(GgufSummaryTest, OllamaLayoutIsSummarisedTranslatedAndAHalfMatchIs400) {
  registry::BlobStoreOptions zstd;
  zstd.min_saving = -1.0;  // always compressed
  registry::BlobStore store(root_, zstd);
  const auto good = store.put(ollama_gemma3(false));
  ASSERT_EQ(good.encoding, registry::BlobEncoding::zstd_seekable);
  const auto s = *models::read_gguf_summary(store, good.digest);
  EXPECT_EQ(s.model_info["gemma3.rope.freq_base"], 1000000.0);
  EXPECT_FALSE(s.model_info.contains("gemma3.vision.block_count"));
  // The tower the text view hides is found in the file as stored, and runs (inline_projector.h).
  EXPECT_EQ(s.inline_projector, "gemma3");
  EXPECT_EQ(s.capabilities, (std::vector<std::string>{"completion", "vision"}));

  const auto bad = store.put(ollama_gemma3(true));
  try {
    models::read_gguf_summary(store, bad.digest);
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_EQ(http::status_error_of(e).status(), 400u);
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.tokens has 1 entries, fewer than the 64 "
                                         "rows of token_embd.weight"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
