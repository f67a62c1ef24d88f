// push and pull against a real docker-registry on loopback, with real stores in temp dirs:
// byte-exact round trips, skipping what is present, refusing tampered blobs, resuming after
// cancellation and after SIGKILL, a pull taking over from another client's that left, and
// Ollama's progress lines in Ollama's order.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "registry/errors.h"
#include "registry/manifest.h"
#include "registry/pull.h"
#include "registry/push.h"
#include "tests/support/docker_registry.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_http_server.h"

namespace vkllm::registry {
namespace {

using test::DockerRegistry;
using test::TempDir;

const std::filesystem::path kGguf =
    std::filesystem::path(VKLLM_SHARED_DIR) / "testdata/models/llama-2-tiny-random.gguf";

struct Store {
  TempDir dir{"vkllm-store"};
  BlobStore blobs{dir.path()};
  Catalog catalog{dir.path() / "catalog.db"};
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Layer put_layer(Store& store, std::string_view media_type, std::string_view bytes) {
  BlobInfo info = store.blobs.put(bytes);
  store.catalog.add_blob(info);
  return Layer{std::string(media_type), info.digest, info.size, {}, {}};
}

// A small model made of real bytes: the shared tiny GGUF, a template, params (with a random
// value so each run's digests differ) and a config.
ModelName make_model(Store& store, const std::string& name_text) {
  Manifest manifest;
  std::string weights = read_file(kGguf);
  if (weights.size() < (1 << 20)) throw std::runtime_error("unexpectedly small " + kGguf.string());
  manifest.layers.push_back(put_layer(store, media_type::kModel, weights));
  manifest.layers.push_back(
      put_layer(store, media_type::kTemplate, "{{ .System }} USER: {{ .Prompt }} ASSISTANT:"));
  std::string params =
      R"({"stop":["USER:"],"seed":)" + std::to_string(std::random_device{}()) + "}";
  manifest.layers.push_back(put_layer(store, media_type::kParams, params));
  manifest.config = put_layer(store, media_type::kConfig,
                              R"({"model_format":"gguf","model_family":"llama",)"
                              R"("architecture":"amd64","os":"linux"})");
  ModelName name = ModelName::parse(name_text);
  store.catalog.put_model(name, manifest.to_json());
  return name;
}

PullOptions pull_options() {
  PullOptions options;
  options.client.parallel_threshold = 256 * 1024;  // the GGUF goes as 4 parallel ranges
  options.client.parallel_parts = 4;
  options.client.initial_backoff = std::chrono::milliseconds(1);
  options.progress_interval = std::chrono::milliseconds(0);
  return options;
}

struct Recorder {
  std::vector<TransferStatus> lines;
  TransferStatusFn fn() {
    return [this](const TransferStatus& line) { lines.push_back(line); };
  }
  // Statuses with consecutive repeats collapsed.
  std::vector<std::string> statuses() const {
    std::vector<std::string> out;
    for (const auto& line : lines) {
      if (out.empty() || out.back() != line.status) out.push_back(line.status);
    }
    return out;
  }
  std::vector<TransferStatus> for_digest(const Digest& digest) const {
    std::vector<TransferStatus> out;
    for (const auto& line : lines) {
      if (line.digest == digest.str()) out.push_back(line);
    }
    return out;
  }
};

Manifest installed_manifest(Store& store, const ModelName& name) {
  auto record = store.catalog.find_model(name);
  if (!record) throw std::runtime_error("model not installed: " + name.display());
  return Manifest::parse(*store.catalog.manifest(record->manifest_digest));
}

// Layers then config, as pull and push walk them.
std::vector<Layer> walk_order(const Manifest& manifest) {
  std::vector<Layer> out = manifest.layers;
  out.push_back(manifest.config);
  return out;
}

std::vector<std::string> expected_statuses(const Manifest& manifest, const std::string& verb,
                                           std::vector<std::string> head,
                                           std::vector<std::string> tail) {
  for (const auto& layer : walk_order(manifest)) {
    head.push_back(verb + " " + layer.digest.hex().substr(0, 12));
  }
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

void expect_same_model(Store& from, Store& to, const ModelName& name) {
  auto a = from.catalog.find_model(name);
  auto b = to.catalog.find_model(name);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->manifest_digest, b->manifest_digest);
  EXPECT_EQ(*from.catalog.manifest(a->manifest_digest), *to.catalog.manifest(b->manifest_digest));
  for (const auto& layer : walk_order(installed_manifest(from, name))) {
    ASSERT_TRUE(to.blobs.contains(layer.digest)) << layer.digest.str();
    ASSERT_TRUE(to.catalog.find_blob(layer.digest)) << layer.digest.str();
    EXPECT_EQ(from.blobs.read_text(layer.digest), to.blobs.read_text(layer.digest))
        << layer.digest.str();
  }
}

size_t files_in(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

TEST(PullPush, RoundTripKeepsEveryByteAndSkipsWhatIsPresent) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/tiny:v1");
  Manifest manifest = installed_manifest(source, name);

  Recorder pushed;
  PushOptions push_options;
  push(name, source.blobs, source.catalog, push_options, pushed.fn());
  EXPECT_EQ(pushed.statuses(), expected_statuses(manifest, "pushing", {"retrieving manifest"},
                                                 {"pushing manifest", "success"}));
  for (const auto& layer : walk_order(manifest)) {
    auto lines = pushed.for_digest(layer.digest);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().completed, layer.size);
    EXPECT_EQ(lines.back().total, layer.size);
  }

  Store target;
  Recorder pulled;
  Digest digest = pull(name, target.blobs, target.catalog, pull_options(), pulled.fn());
  EXPECT_EQ(digest, source.catalog.find_model(name)->manifest_digest);
  EXPECT_EQ(pulled.statuses(),
            expected_statuses(manifest, "pulling", {"pulling manifest"},
                              {"verifying sha256 digest", "writing manifest", "success"}));
  for (const auto& layer : walk_order(manifest)) {
    auto lines = pulled.for_digest(layer.digest);
    ASSERT_FALSE(lines.empty());
    for (size_t i = 1; i < lines.size(); ++i) EXPECT_GE(lines[i].completed, lines[i - 1].completed);
    EXPECT_EQ(lines.back().completed, layer.size);
    EXPECT_EQ(lines.front().total, layer.size);
  }
  expect_same_model(source, target, name);
  EXPECT_EQ(files_in(target.blobs.partial_dir()), 0u);
  EXPECT_TRUE(target.catalog.downloads().empty());

  // Pushing again uploads nothing: one line per blob, done at once.
  Recorder repushed;
  push(name, source.blobs, source.catalog, push_options, repushed.fn());
  for (const auto& layer : walk_order(manifest)) {
    auto lines = repushed.for_digest(layer.digest);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].completed, layer.size);
  }

  // Pulling again fetches nothing: every blob reports done at once. (Proved by tampering
  // with the registry's copy of the weights: a download would now fail verification.)
  std::ofstream(registry.blob_data_path(manifest.layers[0].digest.hex()),
                std::ios::binary | std::ios::trunc)
      << "tampered";
  Recorder again;
  pull(name, target.blobs, target.catalog, pull_options(), again.fn());
  for (const auto& layer : walk_order(manifest)) {
    auto lines = again.for_digest(layer.digest);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].completed, layer.size);
    EXPECT_EQ(lines[0].total, layer.size);
  }
}

TEST(PullPush, RefusesABlobWhoseBytesDoNotMatchItsDigest) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/tampered:latest");
  push(name, source.blobs, source.catalog, {}, nullptr);
  Manifest manifest = installed_manifest(source, name);
  const Digest& weights = manifest.layers[0].digest;
  // Same length, one byte flipped, straight in the registry's storage.
  auto path = registry.blob_data_path(weights.hex());
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;

  Store target;
  Recorder pulled;
  try {
    pull(name, target.blobs, target.catalog, pull_options(), pulled.fn());
    FAIL() << "a tampered blob was accepted";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::digest_mismatch);
    EXPECT_EQ(std::string(e.what()), "digest mismatch, file must be downloaded again: want " +
                                         weights.str() + ", got " +
                                         Digest::of(std::string_view(bytes)).str());
  }
  EXPECT_FALSE(target.blobs.contains(weights));
  EXPECT_FALSE(target.catalog.find_blob(weights));
  EXPECT_FALSE(target.catalog.find_model(name));
  EXPECT_TRUE(target.catalog.downloads().empty());
  EXPECT_EQ(files_in(target.blobs.partial_dir()), 0u);
  EXPECT_EQ(files_in(target.blobs.temp_dir()), 0u);
  EXPECT_EQ(pulled.statuses().back(), "verifying sha256 digest");
}

TEST(PullPush, CancelledPullLeavesNoModelAndResumes) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/resume:latest");
  push(name, source.blobs, source.catalog, {}, nullptr);
  const Layer weights = installed_manifest(source, name).layers[0];

  Store target;
  std::stop_source stop;
  auto options = pull_options();
  options.checkpoint_interval = std::chrono::milliseconds(0);
  uint64_t at_cancel = 0;
  try {
    pull(
        name, target.blobs, target.catalog, options,
        [&](const TransferStatus& line) {
          if (line.digest == weights.digest.str() && line.completed > 0 && !stop.stop_requested()) {
            at_cancel = line.completed;
            stop.request_stop();
          }
        },
        stop.get_token());
    FAIL() << "not cancelled";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::cancelled);
  }
  ASSERT_GT(at_cancel, 0u);
  ASSERT_LT(at_cancel, weights.size);
  EXPECT_FALSE(target.catalog.find_model(name));
  EXPECT_FALSE(target.blobs.contains(weights.digest));
  auto download = target.catalog.find_download(weights.digest);
  ASSERT_TRUE(download);
  EXPECT_GE(download->bytes_done, at_cancel);
  EXPECT_LT(download->bytes_done, weights.size);

  Recorder resumed;
  pull(name, target.blobs, target.catalog, options, resumed.fn());
  auto lines = resumed.for_digest(weights.digest);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().completed, download->bytes_done);  // starts where it stopped
  expect_same_model(source, target, name);
  EXPECT_TRUE(target.catalog.downloads().empty());
}

// Two clients pull one model into one store (the server runs one pull per request); the first
// leaves part-way. The second, waiting on the blob's download lock, takes over where the first
// stopped and finishes with every byte intact.
TEST(PullPush, TwoPullsOfOneModelWhenOneClientLeavesTheOtherCompletes) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/shared:latest");
  push(name, source.blobs, source.catalog, {}, nullptr);
  const Layer weights = installed_manifest(source, name).layers[0];

  Store target;
  auto options = pull_options();
  options.checkpoint_interval = std::chrono::milliseconds(0);
  std::mutex mutex;
  std::condition_variable changed;
  bool second_started = false;
  Recorder second;
  std::optional<Digest> second_result;
  std::exception_ptr second_failure;
  std::thread second_client;
  std::stop_source first_leaves;
  try {
    pull(
        name, target.blobs, target.catalog, options,
        [&](const TransferStatus& line) {
          if (line.digest != weights.digest.str() || line.completed == 0 ||
              second_client.joinable())
            return;
          // The first client is downloading the weights: the second asks for the same model.
          second_client = std::thread([&] {
            try {
              second_result =
                  pull(name, target.blobs, target.catalog, options, [&](const TransferStatus& l) {
                    std::lock_guard lock(mutex);
                    second.lines.push_back(l);
                    second_started = true;
                    changed.notify_all();
                  });
            } catch (...) {
              second_failure = std::current_exception();
            }
          });
          std::unique_lock lock(mutex);
          changed.wait(lock, [&] { return second_started; });  // it has the manifest request out
          lock.unlock();
          std::this_thread::sleep_for(std::chrono::milliseconds(200));  // and waits for the blob
          first_leaves.request_stop();
        },
        first_leaves.get_token());
    FAIL() << "the first pull was not cancelled";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::cancelled);
  }
  ASSERT_TRUE(second_client.joinable()) << "the first pull reported no progress on the weights";
  second_client.join();
  if (second_failure) std::rethrow_exception(second_failure);
  ASSERT_TRUE(second_result);
  EXPECT_EQ(*second_result, source.catalog.find_model(name)->manifest_digest);
  auto lines = second.for_digest(weights.digest);
  ASSERT_FALSE(lines.empty());
  EXPECT_GT(lines.front().completed, 0u) << "the second pull started over instead of taking over";
  EXPECT_EQ(lines.back().completed, weights.size);
  EXPECT_EQ(second.statuses().back(), "success");
  expect_same_model(source, target, name);
  EXPECT_TRUE(target.catalog.downloads().empty());
  EXPECT_EQ(files_in(target.blobs.partial_dir()), 0u);
  EXPECT_EQ(files_in(target.blobs.temp_dir()), 0u);
}

TEST(PullPush, PullKilledMidDownloadResumesInTheNextProcess) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/killed:latest");
  push(name, source.blobs, source.catalog, {}, nullptr);
  const Layer weights = installed_manifest(source, name).layers[0];
  TempDir target_dir("vkllm-killed");

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child pulls slowly and reports progress; the parent kills it part-way.
    close(pipe_fds[0]);
    try {
      BlobStore blobs(target_dir.path());
      Catalog catalog(target_dir.path() / "catalog.db");
      auto options = pull_options();
      options.client.parallel_parts = 2;
      options.checkpoint_interval = std::chrono::milliseconds(0);
      pull(name, blobs, catalog, options, [&](const TransferStatus& line) {
        if (line.digest != weights.digest.str()) return;
        uint64_t done = line.completed;
        if (write(pipe_fds[1], &done, sizeof done) != sizeof done) _exit(3);
        usleep(20000);
      });
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  close(pipe_fds[1]);
  uint64_t seen = 0;
  while (seen < weights.size / 4) {
    if (read(pipe_fds[0], &seen, sizeof seen) != sizeof seen) break;
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(pipe_fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it could be killed";
  ASSERT_GE(seen, weights.size / 4);

  BlobStore blobs(target_dir.path());
  Catalog catalog(target_dir.path() / "catalog.db");
  auto download = catalog.find_download(weights.digest);
  ASSERT_TRUE(download) << "no resume state survived the kill";
  EXPECT_GT(download->bytes_done, 0u);
  Recorder resumed;
  pull(name, blobs, catalog, pull_options(), resumed.fn());
  auto lines = resumed.for_digest(weights.digest);
  ASSERT_FALSE(lines.empty());
  EXPECT_GT(lines.front().completed, 0u);
  EXPECT_EQ(lines.back().completed, weights.size);
  EXPECT_EQ(blobs.read_text(weights.digest), source.blobs.read_text(weights.digest));
  EXPECT_TRUE(catalog.find_model(name));
  EXPECT_TRUE(catalog.downloads().empty());
}

TEST(PullPush, LayerLargerThanTheFreeDiskIsRefusedBeforeAllocating) {
  const std::string config = "{}";
  const Digest huge = Digest::of(std::string_view("claims to be a petabyte"));
  const std::string manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
      R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":")" +
      Digest::of(config).str() + R"(","size":2},"layers":[{"mediaType":")" +
      std::string(media_type::kModel) + R"(","digest":")" + huge.str() +
      R"(","size":1000000000000000}]})";
  test::TestHttpServer server([&](const test::TestRequest& req) {
    if (req.target.find("/manifests/") != std::string::npos) {
      return test::TestResponse{
          200,
          {{"Content-Type", "application/vnd.docker.distribution.manifest.v2+json"}},
          manifest};
    }
    return test::TestResponse{404, {}, "{}"};
  });
  Store target;
  auto options = pull_options();
  options.insecure = true;
  try {
    pull(ModelName::parse(server.host() + "/ns/m:t"), target.blobs, target.catalog, options,
         nullptr);
    FAIL() << "no error";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::io);
    EXPECT_EQ(
        std::string(e.what()).rfind("not enough disk space to pull layer " + huge.short_hex(), 0),
        0u)
        << e.what();
  }
  // Nothing was allocated or recorded.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(target.blobs.partial_dir(), ec)) {
    ADD_FAILURE() << "left behind " << entry.path();
  }
  EXPECT_TRUE(target.catalog.downloads().empty());
}

TEST(PullPush, MissingModelsAndInsecureNamesAreWordedAsOllamaDoes) {
  DockerRegistry registry;
  Store target;
  Recorder pulled;
  try {
    pull(ModelName::parse(registry.host() + "/nobody/nothing:latest"), target.blobs, target.catalog,
         pull_options(), pulled.fn());
    FAIL() << "no error";
  } catch (const OciError& e) {
    EXPECT_EQ(std::string(e.what()), "pull model manifest: file does not exist");
  }
  EXPECT_EQ(pulled.statuses(), std::vector<std::string>{"pulling manifest"});

  try {
    pull(ModelName::parse("http://registry.example.com/ns/m:t"), target.blobs, target.catalog,
         pull_options(), nullptr);
    FAIL() << "no error";
  } catch (const RegistryError& e) {
    EXPECT_EQ(std::string(e.what()), "insecure protocol http");
  }

  Recorder pushed;
  EXPECT_THROW(push(ModelName::parse(registry.host() + "/nobody/nothing:latest"), target.blobs,
                    target.catalog, {}, pushed.fn()),
               RegistryError);
  EXPECT_EQ(pushed.statuses(),
            (std::vector<std::string>{"retrieving manifest", "couldn't retrieve manifest"}));
}

TEST(PullPush, ReplacingAModelRemovesLayersNothingUses) {
  DockerRegistry registry;
  Store source;
  ModelName name = make_model(source, registry.host() + "/tester/replace:latest");
  push(name, source.blobs, source.catalog, {}, nullptr);
  Store target;
  pull(name, target.blobs, target.catalog, pull_options(), nullptr);
  Manifest first = installed_manifest(target, name);

  make_model(source, registry.host() + "/tester/replace:latest");  // new params layer
  push(name, source.blobs, source.catalog, {}, nullptr);
  Recorder pulled;
  pull(name, target.blobs, target.catalog, pull_options(), pulled.fn());
  auto statuses = pulled.statuses();
  ASSERT_GE(statuses.size(), 3u);
  EXPECT_EQ(statuses[statuses.size() - 2], "removing unused layers");
  const Digest& old_params = first.layers[2].digest;
  EXPECT_FALSE(target.blobs.contains(old_params));
  EXPECT_FALSE(target.catalog.find_blob(old_params));
  EXPECT_TRUE(target.blobs.contains(first.layers[0].digest));  // still used
  expect_same_model(source, target, name);
}

}  // namespace
}  // namespace vkllm::registry
