// The background recompression after pulls: a compressible blob stored raw ends up zstd with its
// catalog row saying so, an incompressible one stays raw, a blob deleted before its turn stays
// deleted, a reader opened before the rewrite keeps reading the same bytes, and shutting down
// mid-queue leaves every blob readable and its row matching its file; a server stopped before
// its queue got to a blob compresses it once it starts again.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <stop_token>

#include "registry/model_store.h"
#include "registry/recompress_queue.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_bytes.h"

namespace vkllm::registry {
namespace {

namespace fs = std::filesystem;

std::string words(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return test::compressible_bytes<std::string>(n, rng);
}

std::string noise(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  return test::random_bytes<std::string>(n, rng);
}

const BlobStoreOptions kSmallFrames{.chunk_size = 64 * 1024};

// Stored raw as a pull does with compress_later set: the download file renamed into place, its
// row marked pending recompression.
Digest put_raw(ModelStore& store, const std::string& bytes) {
  const Digest digest = Digest::of(std::string_view(bytes));
  fs::create_directories(store.blobs().partial_dir());
  const fs::path file = store.blobs().partial_dir() / "download";
  std::ofstream(file, std::ios::binary) << bytes;
  store.catalog().add_blob(store.blobs().adopt_raw(file, digest));
  store.catalog().mark_recompression_pending(digest);
  return digest;
}

// The catalog row agrees with the file on disk.
void expect_row_matches_file(ModelStore& store, const Digest& digest) {
  auto row = store.catalog().find_blob(digest);
  auto file = store.blobs().info(digest);
  ASSERT_TRUE(row && file) << digest.str();
  EXPECT_EQ(row->encoding, file->encoding);
  EXPECT_EQ(row->stored_size, file->stored_size);
  EXPECT_EQ(row->stored_size, fs::file_size(*store.blobs().stored_path(digest)));
  EXPECT_EQ(row->size, file->size);
}

struct Fixture {
  test::TempDir dir{"vkllm-recompress"};
  ModelStore store{dir.path(), kSmallFrames};

  Digest put_raw(const std::string& bytes) { return registry::put_raw(store, bytes); }
  void expect_row_matches_file(const Digest& digest) {
    registry::expect_row_matches_file(store, digest);
  }
};

TEST(RecompressQueue, CompressibleRawBlobEndsUpZstdAndIncompressibleStaysRaw) {
  Fixture f;
  const std::string text = words(1 << 20, 1), random = noise(256 * 1024, 2);
  const Digest text_digest = f.put_raw(text), random_digest = f.put_raw(random);
  ASSERT_EQ(f.store.blobs().info(text_digest)->encoding, BlobEncoding::raw);
  {
    RecompressQueue queue(f.store);
    queue.enqueue(text_digest);
    queue.enqueue(random_digest);
    queue.enqueue(text_digest);  // already queued
    queue.wait_idle();
  }
  const auto info = f.store.blobs().info(text_digest);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->encoding, BlobEncoding::zstd_seekable);
  EXPECT_LT(info->stored_size, text.size() / 2);
  EXPECT_FALSE(fs::exists(f.store.blobs().root() / "blobs" / text_digest.file_name()))
      << "the raw copy is still there";
  EXPECT_EQ(f.store.blobs().read_text(text_digest), text);
  f.expect_row_matches_file(text_digest);

  EXPECT_EQ(f.store.blobs().info(random_digest)->encoding, BlobEncoding::raw);
  EXPECT_EQ(f.store.blobs().read_text(random_digest), random);
  f.expect_row_matches_file(random_digest);
  EXPECT_TRUE(fs::is_empty(f.store.blobs().temp_dir()));
}

TEST(RecompressQueue, ABlobDeletedBeforeItsTurnStaysDeleted) {
  Fixture f;
  const Digest digest = f.put_raw(words(512 * 1024, 3));
  ASSERT_TRUE(f.store.catalog().remove_blob(digest));
  ASSERT_TRUE(f.store.blobs().remove(digest));
  std::vector<std::string> reports;
  RecompressQueue queue(f.store, [&](const std::string& line) { reports.push_back(line); });
  queue.enqueue(digest);
  queue.wait_idle();
  EXPECT_FALSE(f.store.blobs().contains(digest));
  EXPECT_FALSE(f.store.catalog().find_blob(digest));
  EXPECT_TRUE(reports.empty());
}

TEST(RecompressQueue, AReaderOpenedBeforeTheRewriteKeepsReadingTheSameBytes) {
  Fixture f;
  const std::string text = words(1 << 20, 4);
  const Digest digest = f.put_raw(text);
  BlobReader before = f.store.blobs().open(digest);
  std::string head(1000, '\0');
  ASSERT_EQ(before.read(std::as_writable_bytes(std::span(head))), head.size());
  {
    RecompressQueue queue(f.store);
    queue.enqueue(digest);
    queue.wait_idle();
  }
  ASSERT_EQ(f.store.blobs().info(digest)->encoding, BlobEncoding::zstd_seekable);
  std::string rest(text.size() - head.size(), '\0');
  ASSERT_EQ(before.read(std::as_writable_bytes(std::span(rest))), rest.size());
  EXPECT_TRUE(head + rest == text);
}

TEST(RecompressQueue, ShuttingDownMidQueueLeavesEveryBlobReadableAndItsRowTrue) {
  Fixture f;
  std::vector<std::pair<Digest, std::string>> blobs;
  for (uint64_t i = 0; i < 4; ++i) {
    std::string text = words(2 << 20, 10 + i);
    blobs.emplace_back(f.put_raw(text), std::move(text));
  }
  {
    RecompressQueue queue(f.store);
    for (const auto& [digest, text] : blobs) queue.enqueue(digest);
  }  // destroyed at once: at most the first is done, the one in progress is abandoned
  for (const auto& [digest, text] : blobs) {
    EXPECT_EQ(f.store.blobs().read_text(digest), text);
    f.expect_row_matches_file(digest);
  }
  EXPECT_TRUE(fs::is_empty(f.store.blobs().temp_dir()));
}

TEST(RecompressQueue, ARestartedServerCompressesWhatTheStoppedOneLeftRaw) {
  test::TempDir dir{"vkllm-recompress-restart"};
  std::vector<std::pair<Digest, std::string>> blobs;
  {  // The first run: two blobs stored raw and the server stopped before its queue ran, a third
     // whose rewrite was stopped midway.
    ModelStore store(dir.path(), kSmallFrames);
    for (uint64_t i = 0; i < 3; ++i) {
      std::string text = words(1 << 20, 20 + i);
      blobs.emplace_back(put_raw(store, text), std::move(text));
    }
    std::stop_source stopped;
    stopped.request_stop();
    store.recompress_blob(blobs[2].first, stopped.get_token());
    for (const auto& [digest, text] : blobs) {
      ASSERT_EQ(store.blobs().info(digest)->encoding, BlobEncoding::raw);
    }
    ASSERT_EQ(store.catalog().recompression_pending().size(), blobs.size());
  }
  // The restart: the same files and catalog.db, a fresh queue that nobody tells about them.
  ModelStore store(dir.path(), kSmallFrames);
  {
    RecompressQueue queue(store);
    queue.wait_idle();
  }
  for (const auto& [digest, text] : blobs) {
    const auto info = store.blobs().info(digest);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->encoding, BlobEncoding::zstd_seekable);
    EXPECT_LT(info->stored_size, text.size() / 2);
    const std::string back = store.blobs().read_text(digest);
    EXPECT_TRUE(back == text) << "bytes differ after recompression";
    EXPECT_EQ(Digest::of(std::string_view(back)), digest);
    expect_row_matches_file(store, digest);
  }
  EXPECT_TRUE(store.catalog().recompression_pending().empty());
  EXPECT_TRUE(fs::is_empty(store.blobs().temp_dir()));
}

}  // namespace
}  // namespace vkllm::registry
