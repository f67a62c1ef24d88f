#include "registry/blob_store.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "registry/errors.h"
#include "registry/seekable_format.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_bytes.h"

namespace vkllm::registry {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

constexpr size_t kChunk = 64 * 1024;

using test::compressible_bytes;
using test::random_bytes;

std::vector<std::byte> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

std::vector<std::byte> read_all(BlobReader& reader, size_t buffer_size) {
  std::vector<std::byte> out, buffer(buffer_size);
  for (;;) {
    size_t n = reader.read(buffer);
    if (n == 0) break;
    out.insert(out.end(), buffer.begin(), buffer.begin() + static_cast<ptrdiff_t>(n));
  }
  return out;
}

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) ++n;
  return n;
}

class BlobStoreTest : public ::testing::Test {
 protected:
  BlobStoreTest() : seed_(std::random_device{}()), rng_(seed_) {}
  BlobStoreOptions options() {
    BlobStoreOptions o;
    o.chunk_size = kChunk;
    o.threads = 3;
    return o;
  }
  unsigned seed_;
  std::mt19937_64 rng_;
  TempDir dir_;
};

TEST(BlobStoreNames, FileNamesStandForTheirDigestRawOrCompressed) {
  const Digest d = Digest::of(std::string_view("blob"));
  EXPECT_EQ(BlobStore::digest_of_file_name(d.file_name()), d);
  EXPECT_EQ(BlobStore::digest_of_file_name(d.file_name() + ".zst"), d);
  std::string upper_hex = d.hex();
  for (char& c : upper_hex) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& bad :
       {"sha256-" + upper_hex, d.file_name() + ".gz", d.file_name().substr(0, 70), d.str(),
        "sha256-" + d.hex() + "0", std::string(".zst"), std::string("sha256-.zst"),
        "tmp-" + d.hex()}) {
    EXPECT_FALSE(BlobStore::digest_of_file_name(bad)) << bad;
  }
}

TEST_F(BlobStoreTest, RoundTripsAtChunkBoundaries) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  for (size_t size : {size_t{0}, size_t{1}, kChunk - 1, kChunk, kChunk + 1, 5 * kChunk + 123}) {
    SCOPED_TRACE("size " + std::to_string(size));
    auto data = compressible_bytes(size, rng_);
    auto digest = Digest::of(data);
    // Write in uneven pieces so chunking does not line up with the caller's writes.
    BlobWriter writer = store.begin_write();
    for (size_t at = 0; at < data.size();) {
      size_t n = std::min<size_t>(data.size() - at, 1 + rng_() % (2 * kChunk));
      writer.write(std::span(data).subspan(at, n));
      at += n;
    }
    EXPECT_EQ(writer.bytes_written(), size);
    BlobInfo info = writer.commit(digest);
    EXPECT_EQ(info.digest, digest);
    EXPECT_EQ(info.size, size);
    // Below a few hundred bytes zstd's frame and seek table overhead cannot pay off.
    EXPECT_EQ(info.encoding, size < 1000 ? BlobEncoding::raw : BlobEncoding::zstd_seekable);
    ASSERT_TRUE(store.contains(digest));
    auto again = store.info(digest);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->size, size);
    EXPECT_EQ(again->stored_size, info.stored_size);
    EXPECT_EQ(again->stored_size, fs::file_size(*store.stored_path(digest)));

    BlobReader reader = store.open(digest);
    EXPECT_EQ(reader.size(), size);
    EXPECT_EQ(read_all(reader, 1 + rng_() % 100000), data);
    if (size > 0) {
      EXPECT_EQ(store.read(digest, 0, size), data);
    }
  }
  EXPECT_EQ(count_files(store.temp_dir()), 0u);
}

TEST_F(BlobStoreTest, RandomRangesMatchTheOriginal) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(9 * kChunk + 777, rng_);
  auto info = store.put(data);
  ASSERT_EQ(info.encoding, BlobEncoding::zstd_seekable);
  BlobReader reader = store.open(info.digest);
  for (int i = 0; i < 300; ++i) {
    uint64_t offset = rng_() % (data.size() + 10);
    uint64_t length = rng_() % (3 * kChunk);
    std::vector<std::byte> got(length);
    got.resize(reader.read_at(offset, got));
    size_t expected = offset >= data.size() ? 0 : std::min<size_t>(length, data.size() - offset);
    ASSERT_EQ(got.size(), expected) << "offset " << offset << " length " << length;
    ASSERT_TRUE(
        std::equal(got.begin(), got.end(),
                   data.begin() + static_cast<ptrdiff_t>(std::min<size_t>(offset, data.size()))))
        << "offset " << offset << " length " << length;
  }
  // Seeking then reading sequentially.
  uint64_t start = rng_() % data.size();
  reader.seek(start);
  EXPECT_EQ(reader.tell(), start);
  auto tail = read_all(reader, 5000);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), data.begin() + static_cast<ptrdiff_t>(start),
                         data.end()));
  EXPECT_EQ(tail.size(), data.size() - start);
}

TEST_F(BlobStoreTest, StoredBlobDecompressesWithTheZstdCli) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(7 * kChunk + 5, rng_);
  auto info = store.put(data);
  ASSERT_EQ(info.encoding, BlobEncoding::zstd_seekable);
  EXPECT_LT(info.stored_size, data.size() / 2);
  fs::path stored = *store.stored_path(info.digest);
  EXPECT_EQ(stored.extension(), ".zst");
  fs::path out = dir_.path() / "cli-out";
  std::string cmd = "zstd -q -d -c '" + stored.string() + "' > '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(read_file(out), data);
}

TEST_F(BlobStoreTest, IncompressibleDataIsStoredRaw) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = random_bytes(3 * kChunk + 17, rng_);
  auto info = store.put(data);
  EXPECT_EQ(info.encoding, BlobEncoding::raw);
  EXPECT_EQ(info.stored_size, data.size());
  fs::path stored = *store.stored_path(info.digest);
  EXPECT_EQ(stored.filename(), info.digest.file_name());
  EXPECT_EQ(read_file(stored), data);
  EXPECT_EQ(store.read(info.digest, 100, 1000),
            std::vector<std::byte>(data.begin() + 100, data.begin() + 1100));
  EXPECT_EQ(count_files(store.temp_dir()), 0u);
}

TEST_F(BlobStoreTest, DigestMismatchLeavesNothingBehind) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(2 * kChunk + 3, rng_);
  auto wrong = Digest::of(std::string_view("something else"));
  BlobWriter writer = store.begin_write();
  writer.write(data);
  try {
    writer.commit(wrong);
    FAIL() << "commit accepted the wrong digest";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::digest_mismatch);
    EXPECT_EQ(std::string(e.what()), "digest mismatch, expected \"" + wrong.str() + "\", got \"" +
                                         Digest::of(data).str() + "\"");
  }
  EXPECT_FALSE(store.contains(wrong));
  EXPECT_FALSE(store.contains(Digest::of(data)));
  EXPECT_EQ(count_files(store.temp_dir()), 0u);
  EXPECT_EQ(count_files(dir_.path() / "blobs"), 0u);
  EXPECT_THROW(writer.write(data), RegistryError);
}

TEST_F(BlobStoreTest, AbandonedWriterRemovesItsTempFile) {
  BlobStore store(dir_.path(), options());
  {
    BlobWriter writer = store.begin_write();
    writer.write(compressible_bytes(3 * kChunk, rng_));
    EXPECT_EQ(count_files(store.temp_dir()), 1u);
  }
  EXPECT_EQ(count_files(store.temp_dir()), 0u);
  EXPECT_TRUE(store.list().empty());
}

TEST_F(BlobStoreTest, DamagedFrameIsReportedNotReturned) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(4 * kChunk, rng_);
  auto info = store.put(data);
  ASSERT_EQ(info.encoding, BlobEncoding::zstd_seekable);
  fs::path stored = *store.stored_path(info.digest);
  auto bytes = read_file(stored);
  // Flip a byte in the middle of the compressed data of some frame.
  size_t at = bytes.size() / 3;
  bytes[at] ^= std::byte{0x5a};
  fs::permissions(stored, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(stored, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  BlobReader reader = store.open(info.digest);
  try {
    read_all(reader, 10000);
    FAIL() << "damaged blob read without error";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt);
    EXPECT_NE(std::string(e.what()).find("frame"), std::string::npos) << e.what();
  }
}

TEST_F(BlobStoreTest, TruncatedSeekTableIsCorrupt) {
  BlobStore store(dir_.path(), options());
  auto info = store.put(compressible_bytes(2 * kChunk, rng_));
  fs::path stored = *store.stored_path(info.digest);
  fs::resize_file(stored, fs::file_size(stored) - 3);
  try {
    store.open(info.digest);
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::corrupt);
  }
}

TEST_F(BlobStoreTest, ExistingBlobIsNotRewritten) {
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(kChunk + 9, rng_);
  auto first = store.put(data);
  auto mtime = fs::last_write_time(*store.stored_path(first.digest));
  auto second = store.put(data, first.digest);
  EXPECT_EQ(second.digest, first.digest);
  EXPECT_EQ(fs::last_write_time(*store.stored_path(first.digest)), mtime);
  EXPECT_EQ(store.list().size(), 1u);
  EXPECT_TRUE(store.remove(first.digest));
  EXPECT_FALSE(store.contains(first.digest));
  EXPECT_FALSE(store.remove(first.digest));
  EXPECT_THROW(store.open(first.digest), RegistryError);
}

TEST_F(BlobStoreTest, PutFileAndExportRoundTrip) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  auto data = compressible_bytes(6 * kChunk + 1, rng_);
  fs::path source = dir_.path() / "source.bin";
  std::ofstream(source, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  auto info = store.put_file(source, Digest::of(data));
  EXPECT_EQ(info.size, data.size());
  fs::path exported = dir_.path() / "exported.bin";
  store.export_to(info.digest, exported);
  EXPECT_EQ(read_file(exported), data);
  EXPECT_THROW(store.put_file(source, Digest::of(std::string_view("x"))), RegistryError);
}

TEST_F(BlobStoreTest, ConcurrentWritersAndReaders) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  BlobStore store(dir_.path(), options());
  constexpr int kThreads = 6;
  std::vector<std::vector<std::byte>> blobs;
  for (int i = 0; i < kThreads; ++i)
    blobs.push_back(compressible_bytes((i + 1) * kChunk + i, rng_));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      try {
        // Each thread writes its own blob and one shared blob, then reads them back.
        auto mine = store.put(blobs[i], Digest::of(blobs[i]));
        auto shared = store.put(blobs[0], Digest::of(blobs[0]));
        for (int round = 0; round < 3; ++round) {
          if (store.read(mine.digest, 0, blobs[i].size()) != blobs[i]) ++failures;
          if (store.read(shared.digest, 0, blobs[0].size()) != blobs[0]) ++failures;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store.list().size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(count_files(store.temp_dir()), 0u);
}

TEST(SeekTable, EncodesZstdSeekableLayout) {
  std::vector<seekable::FrameSizes> frames{{10, 20}, {30, 40}};
  auto table = seekable::encode_table(frames);
  ASSERT_EQ(table.size(), 8 + 2 * 8 + 9u);
  auto le32 = [&](size_t at) {
    return static_cast<uint32_t>(table[at]) | static_cast<uint32_t>(table[at + 1]) << 8 |
           static_cast<uint32_t>(table[at + 2]) << 16 | static_cast<uint32_t>(table[at + 3]) << 24;
  };
  EXPECT_EQ(le32(0), 0x184D2A5Eu);
  EXPECT_EQ(le32(4), 2 * 8 + 9u);
  EXPECT_EQ(le32(8), 10u);
  EXPECT_EQ(le32(12), 20u);
  EXPECT_EQ(le32(24), 2u);
  EXPECT_EQ(table[28], std::byte{0});
  EXPECT_EQ(le32(29), 0x8F92EAB1u);
}

}  // namespace
}  // namespace vkllm::registry
