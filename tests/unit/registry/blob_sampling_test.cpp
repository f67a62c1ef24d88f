// The pull's storage path: a writer decides raw or zstd from a sample of its frames and then
// writes raw without compressing the rest; a pull hashes and stores blobs while they download
// (raw blobs become the stored blob by a rename of the download), optionally leaving
// compressible blobs raw for a later recompress(). Every stored blob reads back byte-identical.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "registry/blob_store.h"
#include "registry/catalog.h"
#include "registry/errors.h"
#include "registry/manifest.h"
#include "registry/pull.h"
#include "registry/push.h"
#include "tests/support/docker_registry.h"
#include "tests/support/seeded.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_bytes.h"

namespace vkllm::registry {
namespace {

namespace fs = std::filesystem;
constexpr size_t kSampledChunk = 64 * 1024;

// A GGUF-like blob: a compressible first frame (metadata) before incompressible "tensors".
std::vector<std::byte> metadata_then_noise(size_t n, std::mt19937_64& rng) {
  auto out = test::compressible_bytes(kSampledChunk, rng);
  const auto noise = test::random_bytes(n > kSampledChunk ? n - kSampledChunk : 0, rng);
  out.insert(out.end(), noise.begin(), noise.end());
  return out;
}

std::vector<std::byte> read_all(const BlobStore& store, const Digest& digest) {
  BlobReader reader = store.open(digest);
  std::vector<std::byte> out(reader.size());
  EXPECT_EQ(reader.read_at(0, out), out.size());
  return out;
}

size_t files_in(const fs::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) ++n;
  return n;
}

BlobStoreOptions small_frames() {
  BlobStoreOptions o;
  o.chunk_size = kSampledChunk;
  o.threads = 2;
  return o;
}

using Seeded = test::Seeded<std::mt19937_64>;

TEST(BlobSampling, IncompressibleSampleSwitchesToRawAndRestoresEveryByte) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  test::TempDir dir("vkllm-sampling");
  BlobStore store(dir.path(), small_frames());
  const auto data = metadata_then_noise(30 * kSampledChunk + 123, s.rng);
  BlobWriter writer = store.begin_write();
  size_t at = 0;
  for (; at < 12 * kSampledChunk; at += 1000) writer.write(std::span(data).subspan(at, 1000));
  // Frame 0 compresses well, frames 1..8 do not: decided before the blob ends.
  EXPECT_EQ(writer.decided_encoding(), BlobEncoding::raw);
  writer.write(std::span(data).subspan(at));
  BlobInfo info = writer.commit(Digest::of(data));
  EXPECT_EQ(info.encoding, BlobEncoding::raw);
  EXPECT_EQ(info.stored_size, data.size());
  EXPECT_EQ(read_all(store, info.digest), data);
  EXPECT_EQ(files_in(store.temp_dir()), 0u);

  // Compressible throughout: zstd, decided early too.
  const auto text = test::compressible_bytes(20 * kSampledChunk + 5, s.rng);
  BlobWriter zwriter = store.begin_write();
  zwriter.write(text);
  EXPECT_EQ(zwriter.decided_encoding(), BlobEncoding::zstd_seekable);
  info = zwriter.commit(Digest::of(text));
  EXPECT_EQ(info.encoding, BlobEncoding::zstd_seekable);
  EXPECT_LT(info.stored_size, text.size() / 2);
  EXPECT_EQ(read_all(store, info.digest), text);
}

TEST(BlobSampling, CallerHashedWriterAdoptAndRecompress) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  test::TempDir dir("vkllm-sampling");
  BlobStore store(dir.path(), small_frames());

  // adopt_raw: a finished download becomes the blob by rename.
  const auto text = test::compressible_bytes(12 * kSampledChunk + 77, s.rng);
  const Digest digest = Digest::of(text);
  fs::create_directories(store.partial_dir());
  const fs::path download = store.partial_dir() / "x.partial";
  std::ofstream(download, std::ios::binary)
      .write(reinterpret_cast<const char*>(text.data()), static_cast<std::streamsize>(text.size()));
  BlobInfo info = store.adopt_raw(download, digest);
  EXPECT_EQ(info.encoding, BlobEncoding::raw);
  EXPECT_FALSE(fs::exists(download));
  EXPECT_EQ(store.stored_path(digest)->filename(), digest.file_name());
  EXPECT_EQ(read_all(store, digest), text);

  // recompress: the raw copy is replaced by a zstd one with the same bytes.
  info = store.recompress(digest);
  EXPECT_EQ(info.encoding, BlobEncoding::zstd_seekable);
  EXPECT_LT(info.stored_size, text.size() / 2);
  EXPECT_FALSE(fs::exists(store.root() / "blobs" / digest.file_name()));
  EXPECT_EQ(read_all(store, digest), text);
  EXPECT_EQ(store.recompress(digest).encoding, BlobEncoding::zstd_seekable);
  // Incompressible blobs stay raw.
  const auto noise = metadata_then_noise(40 * kSampledChunk, s.rng);
  const Digest noise_digest = store.put(noise).digest;
  EXPECT_EQ(store.recompress(noise_digest).encoding, BlobEncoding::raw);
  EXPECT_EQ(read_all(store, noise_digest), noise);

  // A caller-hashed writer trusts the digest it is given (the caller verified it).
  const auto more = test::compressible_bytes(3 * kSampledChunk, s.rng);
  {
    BlobWriter writer = store.begin_write(BlobHashing::by_caller);
    writer.write(more);
    EXPECT_THROW(writer.commit(), RegistryError);
  }
  BlobWriter again = store.begin_write(BlobHashing::by_caller);
  again.write(more);
  EXPECT_EQ(again.commit(Digest::of(more)).digest, Digest::of(more));
  EXPECT_EQ(read_all(store, Digest::of(more)), more);
  EXPECT_EQ(files_in(store.temp_dir()), 0u);
}

TEST(BlobSampling, PullStoresBySampleWhileDownloadingAndCanDeferCompression) {
  Seeded s;
  SCOPED_TRACE("seed " + std::to_string(s.seed));
  test::DockerRegistry registry;
  test::TempDir source_dir("vkllm-source");
  BlobStore source(source_dir.path());
  Catalog source_catalog(source_dir.path() / "catalog.db");
  const auto noise = metadata_then_noise(40 * kSampledChunk + 9, s.rng);
  const auto text = test::compressible_bytes(24 * kSampledChunk + 3, s.rng);
  Manifest manifest;
  for (const auto* bytes : {&noise, &text}) {
    BlobInfo info = source.put(*bytes);
    source_catalog.add_blob(info);
    manifest.layers.push_back(
        Layer{std::string(media_type::kModel), info.digest, info.size, {}, {}});
  }
  const std::string config = R"({"model_format":"gguf","architecture":"amd64","os":"linux"})";
  BlobInfo config_info = source.put(config);
  source_catalog.add_blob(config_info);
  manifest.config =
      Layer{std::string(media_type::kConfig), config_info.digest, config.size(), {}, {}};
  const ModelName name = ModelName::parse(registry.host() + "/tester/sampled:latest");
  source_catalog.put_model(name, manifest.to_json());
  push(name, source, source_catalog, {}, nullptr);

  PullOptions options;
  options.client.parallel_threshold = 256 * 1024;  // ranges in parallel, out of order
  options.client.parallel_parts = 3;
  options.progress_interval = std::chrono::milliseconds(0);
  for (bool defer : {false, true}) {
    SCOPED_TRACE(defer ? "deferred compression" : "inline compression");
    test::TempDir dir("vkllm-target");
    BlobStore store(dir.path(), small_frames());
    Catalog catalog(dir.path() / "catalog.db");
    std::vector<Digest> later;
    options.compress_later = nullptr;
    if (defer) options.compress_later = [&](const Digest& d) { later.push_back(d); };
    pull(name, store, catalog, options, nullptr);

    const Digest noise_digest = Digest::of(noise), text_digest = Digest::of(text);
    EXPECT_EQ(store.info(noise_digest)->encoding, BlobEncoding::raw);
    EXPECT_EQ(read_all(store, noise_digest), noise);
    EXPECT_EQ(read_all(store, text_digest), text);
    EXPECT_EQ(catalog.find_blob(text_digest)->encoding, store.info(text_digest)->encoding);
    if (defer) {
      EXPECT_EQ(later, std::vector<Digest>{text_digest});
      // Recorded in the catalog too, for a server stopped before it recompresses.
      EXPECT_EQ(catalog.recompression_pending(), std::vector<Digest>{text_digest});
      EXPECT_EQ(store.info(text_digest)->encoding, BlobEncoding::raw);
      EXPECT_EQ(store.recompress(text_digest).encoding, BlobEncoding::zstd_seekable);
      EXPECT_EQ(read_all(store, text_digest), text);
    } else {
      EXPECT_TRUE(later.empty());
      EXPECT_TRUE(catalog.recompression_pending().empty());
      EXPECT_EQ(store.info(text_digest)->encoding, BlobEncoding::zstd_seekable);
    }
    EXPECT_EQ(files_in(store.partial_dir()), 0u);
    EXPECT_EQ(files_in(store.temp_dir()), 0u);
    EXPECT_TRUE(catalog.downloads().empty());
  }
}

}  // namespace
}  // namespace vkllm::registry
