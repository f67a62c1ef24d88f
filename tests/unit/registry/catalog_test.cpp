#include "registry/catalog.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <random>
#include <thread>

#include "registry/errors.h"
#include "tests/support/temp_dir.h"

namespace vkllm::registry {
namespace {
using test::TempDir;

BlobInfo fake_blob(const std::string& content) {
  return BlobInfo{Digest::of(content), content.size(), content.size() / 2 + 1,
                  BlobEncoding::zstd_seekable};
}

std::string manifest_for(const BlobInfo& config, const std::vector<BlobInfo>& layers,
                         const std::string& extra_space = "") {
  Manifest m;
  m.config = Layer{std::string(media_type::kConfig), config.digest, config.size, "", ""};
  for (const auto& l : layers)
    m.layers.push_back(Layer{std::string(media_type::kModel), l.digest, l.size, "", ""});
  return m.to_json() + extra_space;
}

std::string pragma(const std::filesystem::path& db, const char* sql) {
  sqlite3* raw = nullptr;
  sqlite3_open(db.c_str(), &raw);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(raw, sql, -1, &stmt, nullptr);
  std::string out;
  if (sqlite3_step(stmt) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return out;
}

TEST(Catalog, MigratesOnceAndUsesWal) {
  TempDir dir;
  auto file = dir.path() / "catalog.db";
  {
    Catalog catalog(file);
    EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
  }
  Catalog again(file);
  EXPECT_EQ(again.schema_version(), Catalog::kSchemaVersion);
  EXPECT_EQ(pragma(file, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma(file, "SELECT COUNT(*) FROM schema_migrations"),
            std::to_string(Catalog::kSchemaVersion));
}

TEST(Catalog, RefusesModelsWhoseBlobsAreMissing) {
  TempDir dir;
  Catalog catalog(dir.path() / "catalog.db");
  auto config = fake_blob("config"), weights = fake_blob("weights");
  auto json = manifest_for(config, {weights});
  auto name = ModelName::parse("m");
  catalog.add_blob(config);
  try {
    catalog.put_model(name, json);
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(e.what()).find(weights.digest.str()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(catalog.find_model(name));
  EXPECT_FALSE(catalog.manifest(Digest::of(json)));
  catalog.add_blob(weights);
  EXPECT_EQ(catalog.put_model(name, json), Digest::of(json));
}

TEST(Catalog, StoresManifestsVerbatimAndResolvesNamesCaseInsensitively) {
  TempDir dir;
  Catalog catalog(dir.path() / "catalog.db");
  auto config = fake_blob("config"), a = fake_blob("a"), b = fake_blob("bb");
  for (const auto& blob : {config, a, b}) catalog.add_blob(blob);
  // Odd whitespace must survive: the model digest is the hash of the exact bytes.
  std::string json = manifest_for(config, {a, b}, "  \n");
  auto when = Clock::now() - std::chrono::hours(5);
  auto digest = catalog.put_model(ModelName::parse("User/Model:Tag"), json, when);
  EXPECT_EQ(digest, Digest::of(json));
  EXPECT_EQ(catalog.manifest(digest), json);

  auto found = catalog.find_model(ModelName::parse("user/model:tag"));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->name.display(), "User/Model:Tag");
  EXPECT_EQ(found->manifest_digest, digest);
  EXPECT_EQ(
      std::chrono::duration_cast<std::chrono::microseconds>(found->modified_at - when).count(), 0);

  auto blobs = catalog.manifest_blobs(digest);
  ASSERT_EQ(blobs.size(), 3u);
  EXPECT_EQ(blobs[0].digest, config.digest);
  EXPECT_EQ(blobs[0].media_type, media_type::kConfig);
  EXPECT_EQ(blobs[1].digest, a.digest);
  EXPECT_EQ(blobs[2].digest, b.digest);
  EXPECT_EQ(blobs[2].size, b.size);

  // Replacing under a differently-cased name keeps the first spelling.
  std::string other = manifest_for(config, {b});
  catalog.put_model(ModelName::parse("USER/MODEL:TAG"), other);
  found = catalog.find_model(ModelName::parse("user/model:tag"));
  EXPECT_EQ(found->name.display(), "User/Model:Tag");
  EXPECT_EQ(found->manifest_digest, Digest::of(other));
  // The replaced manifest is gone, so blob a is no longer referenced.
  EXPECT_FALSE(catalog.manifest(digest));
  EXPECT_EQ(catalog.unreferenced_blobs(), std::vector<Digest>{a.digest});
  EXPECT_EQ(catalog.blob_references(b.digest), 1u);
}

TEST(Catalog, ReferencedBlobsCannotBeRemoved) {
  TempDir dir;
  Catalog catalog(dir.path() / "catalog.db");
  auto config = fake_blob("config"), w = fake_blob("w");
  catalog.add_blob(config);
  catalog.add_blob(w);
  auto json = manifest_for(config, {w});
  catalog.put_model(ModelName::parse("a"), json);
  catalog.put_model(ModelName::parse("b"), json);  // a copy shares the manifest
  EXPECT_THROW(catalog.remove_blob(w.digest), RegistryError);
  EXPECT_TRUE(catalog.remove_model(ModelName::parse("a")));
  EXPECT_FALSE(catalog.remove_model(ModelName::parse("a")));
  EXPECT_TRUE(catalog.manifest(Digest::of(json)));  // still used by b
  EXPECT_THROW(catalog.remove_blob(w.digest), RegistryError);
  EXPECT_TRUE(catalog.remove_model(ModelName::parse("B:latest")));
  EXPECT_FALSE(catalog.manifest(Digest::of(json)));
  EXPECT_EQ(catalog.unreferenced_blobs().size(), 2u);
  EXPECT_TRUE(catalog.remove_blob(w.digest));
  EXPECT_FALSE(catalog.find_blob(w.digest));
  EXPECT_TRUE(catalog.find_blob(config.digest));
}

TEST(Catalog, ListsModelsNewestFirst) {
  TempDir dir;
  Catalog catalog(dir.path() / "catalog.db");
  auto config = fake_blob("config");
  catalog.add_blob(config);
  auto now = Clock::now();
  catalog.put_model(ModelName::parse("old"), manifest_for(config, {}), now - std::chrono::hours(2));
  catalog.put_model(ModelName::parse("new"), manifest_for(config, {}), now);
  catalog.put_model(ModelName::parse("mid"), manifest_for(config, {}), now - std::chrono::hours(1));
  auto models = catalog.models();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].name.model, "new");
  EXPECT_EQ(models[1].name.model, "mid");
  EXPECT_EQ(models[2].name.model, "old");
}

TEST(Catalog, TracksDownloads) {
  TempDir dir;
  Catalog catalog(dir.path() / "catalog.db");
  DownloadRecord r{Digest::of(std::string_view("x")), dir.path() / "partial" / "x", 1000, 10,
                   Clock::now()};
  catalog.put_download(r);
  r.bytes_done = 500;
  catalog.put_download(r);
  auto found = catalog.find_download(r.digest);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->bytes_done, 500u);
  EXPECT_EQ(found->temp_path, r.temp_path);
  EXPECT_EQ(catalog.downloads().size(), 1u);
  EXPECT_TRUE(catalog.remove_download(r.digest));
  EXPECT_FALSE(catalog.remove_download(r.digest));
  EXPECT_TRUE(catalog.downloads().empty());
}

TEST(Catalog, ManyThreadsAndTwoConnections) {
  TempDir dir;
  auto file = dir.path() / "catalog.db";
  Catalog first(file);
  Catalog second(file);  // as another process would
  constexpr int kThreads = 6, kModels = 15;
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Catalog& catalog = t % 2 ? first : second;
      try {
        for (int i = 0; i < kModels; ++i) {
          auto config = fake_blob("config " + std::to_string(t) + " " + std::to_string(i));
          auto weights = fake_blob("weights " + std::to_string(t));
          catalog.add_blob(config);
          catalog.add_blob(weights);
          auto name = ModelName::parse("t" + std::to_string(t) + ":" + std::to_string(i));
          catalog.put_model(name, manifest_for(config, {weights}));
          if (!catalog.find_model(name)) ++errors;
          catalog.models();
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(first.models().size(), static_cast<size_t>(kThreads * kModels));
  EXPECT_EQ(second.blobs().size(), static_cast<size_t>(kThreads * kModels + kThreads));
  EXPECT_TRUE(first.unreferenced_blobs().empty());
}

TEST(Manifest, ParsesAndRejects) {
  std::string hex(64, 'c');
  std::string good =
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
      R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:)" +
      hex +
      R"(","size":5},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:)" +
      std::string(64, 'd') +
      R"(","size":7,"from":"x:latest"},{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:)" +
      hex + R"(","size":5,"unknown":1}]})";
  auto m = Manifest::parse(good);
  EXPECT_EQ(m.config.digest.hex(), hex);
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].from, "x:latest");
  EXPECT_EQ(m.total_size(), 17u);
  EXPECT_EQ(m.blob_digests().size(), 2u);
  ASSERT_NE(m.find_layer(media_type::kModel), nullptr);
  EXPECT_EQ(m.find_layer(media_type::kModel)->size, 7u);
  EXPECT_EQ(m.find_layer(media_type::kSystem), nullptr);
  EXPECT_EQ(Manifest::parse(m.to_json()).to_json(), m.to_json());

  std::vector<std::string> bads{
      std::string("not json"),
      std::string("[]"),
      std::string(R"({"schemaVersion":1})"),
      std::string(R"({"schemaVersion":2,"layers":[]})"),
      R"({"schemaVersion":2,"config":{"mediaType":"x","digest":"sha256:../../etc","size":1},"layers":[]})",
      R"({"schemaVersion":2,"config":{"mediaType":"x","digest":"sha256:)" + hex +
          R"(","size":-1},"layers":[]})",
      R"({"schemaVersion":2,"config":{"mediaType":"x","digest":"sha256:)" + hex +
          R"(","size":1},"layers":{}})"};
  for (const std::string& bad : bads) {
    try {
      Manifest::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const RegistryError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input) << e.what();
    }
  }
}

}  // namespace
}  // namespace vkllm::registry
