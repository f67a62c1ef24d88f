#include "registry/model_store.h"

#include <gtest/gtest.h>
#include <utime.h>

#include <fstream>
#include <random>
#include <thread>

#include "registry/errors.h"
#include "tests/support/temp_dir.h"

namespace vkllm::registry {
namespace {
namespace fs = std::filesystem;
using nlohmann::ordered_json;
using test::TempDir;

BlobStoreOptions small_chunks() {
  BlobStoreOptions o;
  o.chunk_size = 64 * 1024;
  o.threads = 2;
  return o;
}

std::string random_weights(size_t n, std::mt19937_64& rng) {
  // Half random, half repetitive, like quantised weights next to metadata.
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = i % 2 ? static_cast<char>(rng()) : 'w';
  return out;
}

ModelDetails llama_details() {
  ModelDetails d;
  d.family = "llama";
  d.families = {"llama"};
  d.parameter_size = "8.0B";
  d.quantization_level = "Q4_K_M";
  return d;
}

void write_file(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class ModelStoreTest : public ::testing::Test {
 protected:
  ModelStoreTest() : seed_(std::random_device{}()), rng_(seed_) {}

  // Uploads weights and creates `name` from them with a template, system, params, messages.
  Digest create_basic(ModelStore& store, const std::string& name, const std::string& weights,
                      std::vector<std::string>* status = nullptr) {
    auto blob = store.put_blob(weights, Digest::of(weights));
    CreateRequest r;
    r.name = ModelName::parse(name);
    r.files.push_back({blob.digest, std::string(media_type::kModel)});
    r.template_text = "{{ .System }} {{ .Prompt }}";
    r.system = "You are terse.";
    r.licenses = {"MIT"};
    r.parameters = ordered_json::parse(R"({"temperature":0.6,"stop":["<|eot_id|>","</s>"]})");
    r.messages = {{"user", "hi"}, {"assistant", "hello"}};
    details_calls_ = 0;
    return store.create(
        r,
        [&](const Digest& d) {
          EXPECT_EQ(d, blob.digest);
          ++details_calls_;
          return llama_details();
        },
        [&](const std::string& s) {
          if (status) status->push_back(s);
        });
  }

  unsigned seed_;
  std::mt19937_64 rng_;
  int details_calls_ = 0;
  TempDir dir_;
};

TEST_F(ModelStoreTest, CreateWritesOllamaShapedManifestAndConfig) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string weights = random_weights(300000, rng_);
  std::vector<std::string> status;
  Digest digest = create_basic(store, "Tiny", weights, &status);
  EXPECT_EQ(details_calls_, 1);

  auto bytes = store.manifest(ModelName::parse("tiny"));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->digest, digest);
  EXPECT_EQ(Digest::of(bytes->json), digest);
  auto json = ordered_json::parse(bytes->json);
  EXPECT_EQ(json["schemaVersion"], 2);
  EXPECT_EQ(json["mediaType"], "application/vnd.docker.distribution.manifest.v2+json");
  EXPECT_EQ(json["config"]["mediaType"], "application/vnd.docker.container.image.v1+json");
  std::vector<std::string> types;
  for (const auto& l : json["layers"]) types.push_back(l["mediaType"]);
  EXPECT_EQ(types,
            (std::vector<std::string>{
                "application/vnd.ollama.image.model", "application/vnd.ollama.image.template",
                "application/vnd.ollama.image.system", "application/vnd.ollama.image.license",
                "application/vnd.ollama.image.params", "application/vnd.ollama.image.messages"}));
  EXPECT_EQ(json["layers"][0]["digest"], Digest::of(weights).str());
  EXPECT_EQ(json["layers"][0]["size"], weights.size());

  Manifest m = Manifest::parse(bytes->json);
  auto config = ordered_json::parse(store.blobs().read_text(m.config.digest));
  EXPECT_EQ(config["model_format"], "gguf");
  EXPECT_EQ(config["model_family"], "llama");
  EXPECT_EQ(config["model_families"], ordered_json::array({"llama"}));
  EXPECT_EQ(config["model_type"], "8.0B");
  EXPECT_EQ(config["file_type"], "Q4_K_M");
  EXPECT_EQ(config["architecture"], "amd64");
  EXPECT_EQ(config["os"], "linux");
  EXPECT_EQ(config["rootfs"]["diff_ids"].size(), 6u);
  EXPECT_EQ(m.config.size, store.blobs().info(m.config.digest)->size);

  // The params layer is what Go writes: sorted keys, HTML-escaped, trailing newline.
  EXPECT_EQ(store.blobs().read_text(m.find_layer(media_type::kParams)->digest),
            "{\"stop\":[\"\\u003c|eot_id|\\u003e\",\"\\u003c/s\\u003e\"],\"temperature\":0.6}\n");
  EXPECT_EQ(
      store.blobs().read_text(m.find_layer(media_type::kMessages)->digest),
      "[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"hello\"}]\n");

  ASSERT_EQ(status.size(), 8u);
  EXPECT_EQ(status[0], "using existing layer " + Digest::of(weights).str());
  EXPECT_EQ(status[1].rfind("creating new layer sha256:", 0), 0u) << status[1];
  EXPECT_EQ(status[6], "writing manifest");
  EXPECT_EQ(status[7], "success");
}

TEST_F(ModelStoreTest, ListAndShow) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string weights = random_weights(100000, rng_);
  Digest digest = create_basic(store, "user/tiny:q4", weights);

  auto models = store.list();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name.display(), "user/tiny:q4");
  EXPECT_EQ(models[0].digest, digest);
  EXPECT_EQ(models[0].details.family, "llama");
  EXPECT_EQ(models[0].details.quantization_level, "Q4_K_M");
  Manifest m = Manifest::parse(*store.catalog().manifest(digest));
  EXPECT_EQ(models[0].size, m.total_size());
  EXPECT_GT(models[0].size, weights.size());

  ModelShow show = store.show(ModelName::parse("USER/Tiny:Q4"));
  EXPECT_EQ(show.template_text, "{{ .System }} {{ .Prompt }}");
  EXPECT_EQ(show.system, "You are terse.");
  EXPECT_EQ(show.licenses, std::vector<std::string>{"MIT"});
  EXPECT_EQ(show.messages, (std::vector<ChatMessage>{{"user", "hi"}, {"assistant", "hello"}}));
  EXPECT_EQ(show.model_blob, Digest::of(weights));
  EXPECT_EQ(show.details.parent_model, "");
  EXPECT_EQ(show.parameters_text(),
            "stop                           \"<|eot_id|>\"\n"
            "stop                           \"</s>\"\n"
            "temperature                    0.6");
  auto path_of = [](const Digest& d) { return "/store/blobs/" + d.file_name(); };
  EXPECT_EQ(show.modelfile(path_of),
            "# Modelfile generated by \"ollama show\"\n"
            "# To build a new Modelfile based on this, replace FROM with:\n"
            "# FROM user/tiny:q4\n"
            "\n"
            "FROM /store/blobs/" +
                Digest::of(weights).file_name() +
                "\n"
                "TEMPLATE {{ .System }} {{ .Prompt }}\n"
                "SYSTEM You are terse.\n"
                "PARAMETER stop <|eot_id|>\n"
                "PARAMETER stop </s>\n"
                "PARAMETER temperature 0.6\n"
                "LICENSE MIT\n"
                "MESSAGE user hi\n"
                "MESSAGE assistant hello\n");
  // /api/show's system and options overrides only change the rendering.
  std::string overridden =
      show.modelfile(path_of, std::string("Be brief."), ordered_json::parse(R"({"num_ctx":8192})"));
  EXPECT_NE(overridden.find("SYSTEM Be brief.\n"), std::string::npos);
  EXPECT_NE(overridden.find("PARAMETER num_ctx 8192\n"), std::string::npos);

  try {
    store.show(ModelName::parse("missing"));
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
    EXPECT_EQ(std::string(e.what()), "model 'missing:latest' not found");
  }
}

TEST_F(ModelStoreTest, CreateFromAnInstalledModelReusesLayers) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string weights = random_weights(100000, rng_);
  create_basic(store, "base", weights);
  CreateRequest r;
  r.name = ModelName::parse("derived");
  r.from = ModelName::parse("BASE");
  r.system = "Pirate.";
  r.licenses = {"extra"};
  r.parameters = ordered_json::parse(R"({"temperature":0.9,"num_ctx":2048})");
  std::vector<std::string> status;
  store.create(
      r, [](const Digest&) -> ModelDetails { throw std::runtime_error("not called for from"); },
      [&](const std::string& s) { status.push_back(s); });
  ModelShow show = store.show(ModelName::parse("derived"));
  EXPECT_EQ(show.model_blob, Digest::of(weights));
  EXPECT_EQ(show.details.parent_model, "base:latest");
  EXPECT_EQ(show.details.family, "llama");
  EXPECT_EQ(show.system, "Pirate.");
  EXPECT_EQ(show.template_text, "{{ .System }} {{ .Prompt }}");
  EXPECT_EQ(show.licenses, (std::vector<std::string>{"MIT", "extra"}));
  EXPECT_EQ(show.parameters.dump(),
            R"({"num_ctx":2048,"stop":["<|eot_id|>","</s>"],"temperature":0.9})");
  EXPECT_EQ(show.messages.size(), 2u);  // kept: the request gave none
  EXPECT_EQ(show.manifest.layers[0].from, "base:latest");
  EXPECT_EQ(status[0], "using existing layer " + Digest::of(weights).str());

  CreateRequest none;
  none.name = ModelName::parse("x");
  try {
    store.create(none, {});
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(std::string(e.what()), "neither 'from' or 'files' was specified");
  }
  none.from = ModelName::parse("not-installed");
  EXPECT_THROW(store.create(none, {}), RegistryError);
  CreateRequest missing_blob;
  missing_blob.name = ModelName::parse("x");
  missing_blob.files.push_back(
      {Digest::of(std::string_view("absent")), std::string(media_type::kModel)});
  try {
    store.create(missing_blob, [](const Digest&) { return ModelDetails{}; });
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
  EXPECT_FALSE(store.find(ModelName::parse("x")));
}

TEST_F(ModelStoreTest, CopyAndDeletePruneOnlyUnusedBlobs) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string weights = random_weights(100000, rng_);
  Digest digest = create_basic(store, "a", weights);
  store.copy(ModelName::parse("a"), ModelName::parse("ns/b:v1"));
  store.copy(ModelName::parse("a"), ModelName::parse("A"));  // onto itself: no-op
  EXPECT_EQ(store.find(ModelName::parse("ns/b:v1"))->manifest_digest, digest);
  EXPECT_EQ(store.list().size(), 2u);
  try {
    store.copy(ModelName::parse("nope"), ModelName::parse("c"));
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }

  size_t blob_count = store.catalog().blobs().size();
  EXPECT_EQ(blob_count, 7u);  // weights, template, system, license, params, messages, config
  EXPECT_TRUE(store.remove(ModelName::parse("a")));
  EXPECT_FALSE(store.remove(ModelName::parse("a")));
  EXPECT_EQ(store.catalog().blobs().size(), blob_count);  // all still used by ns/b:v1
  EXPECT_TRUE(store.has_blob(Digest::of(weights)));
  EXPECT_TRUE(store.remove(ModelName::parse("NS/B:V1")));
  EXPECT_TRUE(store.catalog().blobs().empty());
  EXPECT_TRUE(store.blobs().list().empty());
  EXPECT_TRUE(store.list().empty());
}

TEST_F(ModelStoreTest, ReplacingAModelPrunesUnlessNoPrune) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string first = random_weights(50000, rng_), second = random_weights(50000, rng_);
  create_basic(store, "m", first);
  create_basic(store, "m", second);
  EXPECT_FALSE(store.has_blob(Digest::of(first)));
  EXPECT_FALSE(store.blobs().contains(Digest::of(first)));

  store.set_prune(false);  // OLLAMA_NOPRUNE
  std::string third = random_weights(50000, rng_);
  create_basic(store, "m", third);
  store.set_prune(true);
  EXPECT_TRUE(store.has_blob(Digest::of(second)));
  // The second model's weights and its config (which names them in rootfs) are unused now.
  auto pruned = store.prune();
  EXPECT_EQ(pruned.size(), 2u);
  EXPECT_NE(std::find(pruned.begin(), pruned.end(), Digest::of(second)), pruned.end());
  EXPECT_FALSE(store.blobs().contains(Digest::of(second)));
  EXPECT_TRUE(store.has_blob(Digest::of(third)));
}

TEST_F(ModelStoreTest, DeleteKeepsBlobsUnderNoPruneUntilAPrune) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  std::string weights = random_weights(50000, rng_);
  create_basic(store, "m", weights);
  store.set_prune(false);  // OLLAMA_NOPRUNE
  EXPECT_TRUE(store.remove(ModelName::parse("m")));
  store.set_prune(true);
  EXPECT_TRUE(store.list().empty());
  EXPECT_TRUE(store.blobs().contains(Digest::of(weights)));
  EXPECT_FALSE(store.prune().empty());
  EXPECT_FALSE(store.blobs().contains(Digest::of(weights)));
}

// Crash simulation: each step of a write leaves what a kill at that point would leave, then a
// fresh open (which runs recover()) must yield a consistent store.
TEST_F(ModelStoreTest, RecoversFromACrashAtEveryStep) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::string weights = random_weights(200000, rng_);
  Digest kept, orphan_file, lost_file;
  {
    ModelStore store(dir_.path(), small_chunks());
    kept = create_basic(store, "kept", weights);
    // Killed mid-write: a writer's temp file.
    write_file(store.blobs().temp_dir() / "deadbeef.tmp", "half a blob");
    // Killed after the rename, before the row: complete file, no row.
    orphan_file = store.blobs().put(std::string_view("orphan blob contents")).digest;
    // A blob whose file vanished while a model used it.
    std::string doomed = random_weights(1000, rng_);
    create_basic(store, "doomed", doomed);
    lost_file = Digest::of(doomed);
    store.blobs().remove(lost_file);
    // Downloads: one row whose temp file is gone, one live with a part-state file, one stray
    // partial file without a row.
    auto partial = store.blobs().partial_dir();
    store.catalog().put_download(
        {Digest::of(std::string_view("gone")), partial / "gone.partial", 10, 5, Clock::now()});
    Digest live = Digest::of(std::string_view("live"));
    write_file(partial / (live.file_name() + ".partial"), "0123");
    write_file(partial / (live.file_name() + ".partial-0"), "{}");
    write_file(partial / (live.file_name() + ".parts"), "{}");
    store.catalog().put_download(
        {live, partial / (live.file_name() + ".partial"), 10, 4, Clock::now()});
    write_file(partial / "stray.partial", "x");
  }
  ModelStore store(dir_.path(), small_chunks());  // runs recover()
  EXPECT_TRUE(fs::is_empty(store.blobs().temp_dir()));
  EXPECT_TRUE(store.catalog().find_blob(orphan_file));
  EXPECT_FALSE(store.catalog().find_blob(lost_file));
  EXPECT_FALSE(store.find(ModelName::parse("doomed")));
  EXPECT_TRUE(store.find(ModelName::parse("kept")));
  EXPECT_EQ(store.show(ModelName::parse("kept")).digest, kept);
  auto downloads = store.catalog().downloads();
  ASSERT_EQ(downloads.size(), 1u);
  EXPECT_EQ(downloads[0].digest, Digest::of(std::string_view("live")));
  EXPECT_TRUE(fs::exists(downloads[0].temp_path));
  EXPECT_TRUE(fs::exists(downloads[0].temp_path.string() + "-0"));
  EXPECT_TRUE(
      fs::exists(store.blobs().partial_dir() / (downloads[0].digest.file_name() + ".parts")));
  EXPECT_FALSE(fs::exists(store.blobs().partial_dir() / "stray.partial"));
  // Invariant: every model's blobs have rows and files.
  for (const auto& model : store.catalog().models())
    for (const auto& layer : store.catalog().manifest_blobs(model.manifest_digest)) {
      EXPECT_TRUE(store.catalog().find_blob(layer.digest)) << layer.digest.str();
      EXPECT_TRUE(store.blobs().contains(layer.digest)) << layer.digest.str();
    }
  // A second recover finds nothing to do.
  auto report = store.recover();
  EXPECT_EQ(report.temp_files_removed + report.blob_rows_added + report.blob_rows_removed +
                report.downloads_removed + report.models_removed.size(),
            0u);
}

TEST_F(ModelStoreTest, AbandonedDownloadsAreDeletedAfterTheGracePeriod) {
  Digest stale = Digest::of(std::string_view("stale")),
         recent = Digest::of(std::string_view("recent"));
  fs::path stale_file, recent_file;
  {
    ModelStore store(dir_.path(), small_chunks());
    auto partial = store.blobs().partial_dir();
    fs::create_directories(partial);
    stale_file = partial / (stale.file_name() + ".partial");
    recent_file = partial / (recent.file_name() + ".partial");
    // As a manifest claiming a 10^12-byte layer leaves it: a huge sparse file.
    for (const auto& f : {stale_file, recent_file}) {
      write_file(f, "");
      fs::resize_file(f, uint64_t{1} << 40);
      write_file(f.string() + ".parts", "{}");
    }
    const auto old = Clock::now() - ModelStore::kAbandonedDownloadGrace - std::chrono::hours(1);
    store.catalog().put_download({stale, stale_file, uint64_t{1} << 40, 0, old});
    store.catalog().put_download({recent, recent_file, uint64_t{1} << 40, 0, Clock::now()});
  }
  ModelStore store(dir_.path(), small_chunks());  // start-up runs recover()
  EXPECT_FALSE(fs::exists(stale_file));
  EXPECT_FALSE(store.catalog().find_download(stale));
  EXPECT_TRUE(fs::exists(recent_file));  // still within the grace period: resumable
  EXPECT_TRUE(store.catalog().find_download(recent));
}

TEST_F(ModelStoreTest, ModelCommitRefusesMissingBlobs) {
  ModelStore store(dir_.path(), small_chunks());
  auto config = store.put_blob(std::string_view("{}"));
  Manifest m;
  m.config = Layer{std::string(media_type::kConfig), config.digest, config.size, "", ""};
  m.layers.push_back(
      Layer{std::string(media_type::kModel), Digest::of(std::string_view("w")), 1, "", ""});
  EXPECT_THROW(store.commit_model(ModelName::parse("m"), m.to_json()), RegistryError);
  // A row without a file (a crash can never produce one, but a user can) is refused too.
  auto w = store.put_blob(std::string_view("w"));
  store.blobs().remove(w.digest);
  EXPECT_THROW(store.commit_model(ModelName::parse("m"), m.to_json()), RegistryError);
  EXPECT_FALSE(store.find(ModelName::parse("m")));
  store.put_blob(std::string_view("w"));
  EXPECT_EQ(store.commit_model(ModelName::parse("m"), m.to_json()), Digest::of(m.to_json()));
}

TEST_F(ModelStoreTest, SecondOpenerDoesNotCleanUpTheFirstOnesTempFiles) {
  ModelStore first(dir_.path(), small_chunks());
  BlobWriter writer = first.blobs().begin_write();
  writer.write(std::string_view("in flight"));
  {
    ModelStore second(dir_.path(), small_chunks());
    EXPECT_FALSE(fs::is_empty(first.blobs().temp_dir()));
  }
  auto info = first.commit_blob(writer, Digest::of(std::string_view("in flight")));
  EXPECT_TRUE(first.has_blob(info.digest));
}

TEST_F(ModelStoreTest, ImportsAnOllamaStore) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  fs::path ollama = dir_.path() / "ollama";
  std::string gguf_path =
      std::string(VKLLM_SHARED_DIR) + "/testdata/models/llama-2-tiny-random.gguf";
  std::ifstream in(gguf_path, std::ios::binary);
  std::string weights((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(weights.size(), 1000u) << gguf_path;
  std::string tmpl = "{{ .Prompt }}";
  std::string config =
      R"({"model_format":"gguf","model_family":"llama","model_families":["llama"],"model_type":"1M","file_type":"F32","architecture":"amd64","os":"linux"})";
  auto blob = [&](const std::string& bytes) {
    Digest d = Digest::of(bytes);
    write_file(ollama / "blobs" / d.file_name(), bytes);
    return d;
  };
  Digest w = blob(weights), t = blob(tmpl), c = blob(config);
  // Ollama writes manifests with its own spacing; the bytes must be kept exactly.
  std::string manifest =
      "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
      "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":\"" +
      c.str() + "\",\"size\":" + std::to_string(config.size()) +
      "},\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"" +
      w.str() + "\",\"size\":" + std::to_string(weights.size()) +
      "},{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"" + t.str() +
      "\",\"size\":" + std::to_string(tmpl.size()) + "}]}";
  fs::path m1 = ollama / "manifests/registry.ollama.ai/library/tiny/latest";
  fs::path m2 = ollama / "manifests/hf.co/Org/Tiny-GGUF/Q4_K_M";
  write_file(m1, manifest);
  write_file(m2, manifest);
  struct utimbuf old_time {
    1700000000, 1700000000
  };
  utime(m1.c_str(), &old_time);
  write_file(ollama / "manifests/registry.ollama.ai/library/broken/latest", "{not json");
  // A blob whose content does not match its name must not be imported.
  std::string liar_config = R"({"model_format":"gguf"})";
  Digest liar = Digest::of(liar_config);
  write_file(ollama / "blobs" / liar.file_name(), "tampered");
  std::string liar_manifest = manifest;
  liar_manifest.replace(liar_manifest.find(c.str()), c.str().size(), liar.str());
  write_file(ollama / "manifests/registry.ollama.ai/library/liar/latest", liar_manifest);

  ModelStore store(dir_.path() / "ours", small_chunks());
  std::vector<std::string> status;
  auto report =
      store.import_ollama_store(ollama, [&](const std::string& s) { status.push_back(s); });
  EXPECT_EQ(report.models, (std::vector<std::string>{"hf.co/Org/Tiny-GGUF:Q4_K_M", "tiny:latest"}));
  EXPECT_EQ(report.blobs_copied, 3u);
  // The second copy of the manifest finds all three; the liar fails on its config first.
  EXPECT_EQ(report.blobs_skipped, 3u);
  ASSERT_EQ(report.failures.size(), 2u);
  EXPECT_NE(report.failures[0].find("broken"), std::string::npos) << report.failures[0];
  EXPECT_NE(report.failures[1].find("digest mismatch"), std::string::npos) << report.failures[1];
  EXPECT_FALSE(store.blobs().contains(liar));
  EXPECT_FALSE(store.find(ModelName::parse("liar")));

  auto record = store.find(ModelName::parse("tiny"));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->manifest_digest, Digest::of(manifest));
  EXPECT_EQ(store.manifest(ModelName::parse("tiny"))->json, manifest);
  EXPECT_EQ(Clock::to_time_t(record->modified_at), 1700000000);
  EXPECT_EQ(
      store.blobs().read(w, 0, weights.size()),
      std::vector<std::byte>(reinterpret_cast<const std::byte*>(weights.data()),
                             reinterpret_cast<const std::byte*>(weights.data()) + weights.size()));
  auto list = store.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].name.display(), "tiny:latest");  // older mtime sorts last
  EXPECT_EQ(list[1].details.quantization_level, "F32");

  auto again = store.import_ollama_store(ollama);
  EXPECT_EQ(again.blobs_copied, 0u);
  EXPECT_EQ(again.models.size(), 2u);
  EXPECT_THROW(store.import_ollama_store(dir_.path() / "nowhere"), RegistryError);
}

TEST_F(ModelStoreTest, ConcurrentCreatesListsAndReads) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ModelStore store(dir_.path(), small_chunks());
  constexpr int kThreads = 4;
  std::vector<std::string> weights;
  for (int i = 0; i < kThreads; ++i) weights.push_back(random_weights(150000 + i, rng_));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 3; ++round) {
          std::string name = "t" + std::to_string(t) + ":r" + std::to_string(round);
          auto blob = store.put_blob(weights[t], Digest::of(weights[t]));
          CreateRequest r;
          r.name = ModelName::parse(name);
          r.files.push_back({blob.digest, std::string(media_type::kModel)});
          r.system = "thread " + std::to_string(t);
          store.create(r, [](const Digest&) { return llama_details(); });
          store.copy(r.name, ModelName::parse(name + "-copy"));
          if (round > 0)
            store.remove(
                ModelName::parse("t" + std::to_string(t) + ":r" + std::to_string(round - 1)));
          store.list();
          auto show = store.show(r.name);
          if (show.system != "thread " + std::to_string(t)) ++failures;
          auto got = store.blobs().read(*show.model_blob, 0, weights[t].size());
          if (got.size() != weights[t].size() ||
              std::memcmp(got.data(), weights[t].data(), got.size()) != 0)
            ++failures;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store.list().size(), static_cast<size_t>(kThreads * 4));
  for (const auto& model : store.catalog().models())
    for (const auto& layer : store.catalog().manifest_blobs(model.manifest_digest))
      EXPECT_TRUE(store.blobs().contains(layer.digest));
}

}  // namespace
}  // namespace vkllm::registry
