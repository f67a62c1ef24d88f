// Pull throughput over loopback from a real docker-registry (tests/support/start-registry.sh):
//   BM_DownloadBlob/<parts>  the OCI client alone, ranges written into memory
//   BM_Pull                  the whole pull: download into the store's partial file, verify
//                            sha256, store (zstd attempt), catalog rows, manifest
// The blob is random (incompressible) bytes; VKLLM_BENCH_PULL_MB sets its size (default 200).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "registry/manifest.h"
#include "registry/pull.h"
#include "registry/sha256.h"
#include "tests/support/docker_registry.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace vkllm::registry;

struct Fixture {
  vkllm::test::DockerRegistry registry;
  std::string blob;
  Digest digest = Digest::of(std::string_view(""));
  ModelName name;
  OciRepository repo;

  Fixture() {
    const char* mb = std::getenv("VKLLM_BENCH_PULL_MB");
    size_t size = (mb ? std::strtoull(mb, nullptr, 10) : 200) << 20;
    blob.resize(size);
    std::mt19937_64 rng(std::random_device{}());
    for (size_t i = 0; i + 8 <= size; i += 8) {
      uint64_t v = rng();
      std::memcpy(blob.data() + i, &v, 8);
    }
    digest = Digest::of(std::string_view(blob));
    name = ModelName::parse(registry.host() + "/bench/big:latest");
    repo = oci_repository(name, false);

    OciClient client;
    auto read = [this](const std::string& bytes) {
      return [&bytes](uint64_t offset, std::span<std::byte> out) {
        size_t n = std::min<size_t>(out.size(), bytes.size() - offset);
        std::memcpy(out.data(), bytes.data() + offset, n);
        return n;
      };
    };
    client.upload_blob(repo, digest.str(), blob.size(), read(blob), nullptr);
    std::string config = R"({"model_format":"gguf","architecture":"amd64","os":"linux"})";
    Digest config_digest = Digest::of(std::string_view(config));
    client.upload_blob(repo, config_digest.str(), config.size(), read(config), nullptr);
    Manifest manifest;
    manifest.config = Layer{std::string(media_type::kConfig), config_digest, config.size(), {}, {}};
    manifest.layers.push_back(Layer{std::string(media_type::kModel), digest, blob.size(), {}, {}});
    client.put_manifest(repo, name.tag, manifest.to_json(), kDockerManifestV2);
  }
};

Fixture& fixture() {
  static Fixture instance;
  return instance;
}

void BM_DownloadBlob(benchmark::State& state) {
  auto& f = fixture();
  OciClientOptions options;
  options.parallel_threshold = 1;
  options.parallel_parts = static_cast<unsigned>(state.range(0));
  OciClient client(options);
  std::string out(f.blob.size(), '\0');
  for (auto _ : state) {
    auto parts = plan_blob_parts(f.blob.size(), options);
    client.download_blob(
        f.repo, f.digest.str(), parts,
        [&](uint64_t offset, std::span<const std::byte> bytes) {
          std::memcpy(out.data() + offset, bytes.data(), bytes.size());
        },
        nullptr);
  }
  if (out != f.blob) state.SkipWithError("downloaded bytes differ");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.blob.size()));
}
BENCHMARK(BM_DownloadBlob)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Pull(benchmark::State& state) {
  auto& f = fixture();
  PullOptions options;
  options.progress_interval = std::chrono::milliseconds(60);
  for (auto _ : state) {
    state.PauseTiming();
    auto dir = std::make_unique<vkllm::test::TempDir>("vkllm-bench-pull");
    auto store = std::make_unique<BlobStore>(dir->path());
    auto catalog = std::make_unique<Catalog>(dir->path() / "catalog.db");
    state.ResumeTiming();
    pull(f.name, *store, *catalog, options, nullptr);
    state.PauseTiming();
    catalog.reset();
    store.reset();
    dir.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.blob.size()));
}
BENCHMARK(BM_Pull)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
