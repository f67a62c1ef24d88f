// The store's defences against damage and races (issue 41): raw blobs hashed against their digest
// before use, one writing process per store, and create never losing a layer to a concurrent
// delete's prune.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <thread>

#include "registry/errors.h"
#include "registry/model_store.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_bytes.h"

namespace vkllm::registry {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

BlobStoreOptions small_chunks() {
  BlobStoreOptions o;
  o.chunk_size = 64 * 1024;
  o.threads = 2;
  return o;
}

void flip_byte(const fs::path& file, uint64_t offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

class StoreIntegrityTest : public ::testing::Test {
 protected:
  StoreIntegrityTest() : seed_(std::random_device{}()), rng_(seed_) {}
  unsigned seed_;
  std::mt19937_64 rng_;
  TempDir dir_;
};

TEST_F(StoreIntegrityTest, ARawBlobChangedOnDiskFailsVerification) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const auto bytes = test::random_bytes<std::string>(300000, rng_);  // incompressible: raw
  Digest digest;
  fs::path file;
  {
    BlobStore store(dir_.path(), small_chunks());
    digest = store.put(bytes).digest;
    ASSERT_EQ(store.info(digest)->encoding, BlobEncoding::raw);
    file = *store.stored_path(digest);
    EXPECT_NO_THROW(store.verify(digest));
    flip_byte(file, rng_() % bytes.size());
    // The same store notices: the file is no longer the one it verified.
    try {
      store.verify(digest);
      FAIL() << "a damaged raw blob passed";
    } catch (const RegistryError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::corrupt);
      EXPECT_NE(e.message().find("blob " + digest.str() + " is corrupt"), std::string::npos)
          << e.message();
    }
  }
  BlobStore fresh(dir_.path(), small_chunks());  // a new process hashes it anew
  EXPECT_THROW(fresh.verify(digest), RegistryError);
  EXPECT_THROW(fresh.verify(Digest::of(std::string_view("absent"))), RegistryError);
}

TEST_F(StoreIntegrityTest, CompressedBlobsPassAtOnceTheirFramesCarryChecksums) {
  BlobStore store(dir_.path(), small_chunks());
  const auto bytes = test::compressible_bytes<std::string>(300000, rng_);
  const Digest digest = store.put(bytes).digest;
  ASSERT_EQ(store.info(digest)->encoding, BlobEncoding::zstd_seekable);
  EXPECT_NO_THROW(store.verify(digest));
}

TEST_F(StoreIntegrityTest, OnlyOneProcessWritesAStore) {
  ModelStore first(dir_.path(), small_chunks());
  first.claim_sole_writer();
  first.claim_sole_writer();  // idempotent
  {
    ModelStore second(dir_.path(), small_chunks());
    try {
      second.claim_sole_writer();
      FAIL() << "a second writer claimed the store";
    } catch (const RegistryError& e) {
      EXPECT_NE(e.message().find("in use by another vkllm process (pid " +
                                 std::to_string(::getpid()) + ")"),
                std::string::npos)
          << e.message();
    }
  }
  // Readers (CLI commands reading a prompt or a show) still open it.
  EXPECT_NO_THROW(ModelStore reader(dir_.path(), small_chunks()));
}

TEST_F(StoreIntegrityTest, TheStoreIsFreeAgainOnceItsWriterCloses) {
  { ModelStore(dir_.path(), small_chunks()).claim_sole_writer(); }
  ModelStore next(dir_.path(), small_chunks());
  EXPECT_NO_THROW(next.claim_sole_writer());
}

// A create whose system prompt is also the layer of a model being deleted: the delete's prune
// must not remove the layer between the create writing it and committing its manifest.
TEST_F(StoreIntegrityTest, CreateSharingALayerWithAModelBeingDeletedNeverFails) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  const auto weights = test::random_bytes<std::string>(20000, rng_);
  const Digest blob = store.put_blob(weights, Digest::of(weights)).digest;
  CreateRequest base;
  base.name = ModelName::parse("base");
  base.files.push_back({blob, std::string(media_type::kModel)});
  store.create(base, [](const Digest&) { return ModelDetails{}; });
  auto derived = [](const std::string& name, const std::string& system) {
    CreateRequest r;
    r.name = ModelName::parse(name);
    r.from = ModelName::parse("base");
    r.system = system;
    return r;
  };
  int failures = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string system = "shared system prompt " + std::to_string(i);
    store.create(derived("victim", system), {});
    std::thread deleter([&] { store.remove(ModelName::parse("victim")); });
    try {
      store.create(derived("survivor", system), {});
    } catch (const RegistryError& e) {
      ++failures;
      ADD_FAILURE() << "create " << i << ": " << e.message();
    }
    deleter.join();
    if (failures == 0) {
      EXPECT_EQ(store.show(ModelName::parse("survivor")).system, system);
    }
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace vkllm::registry
