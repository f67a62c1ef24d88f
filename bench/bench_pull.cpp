// Pull throughput over loopback from a real docker-registry (tests/support/start-registry.sh),
// against what the wire and the hash alone allow:
//   baseline  `curl -s <blob url> | sha256sum` (download + verify, no store), best of 2
//   pull      registry::pull() into a fresh store: manifest, download into the partial file,
//             sha256 and the zstd sample while it downloads, raw or zstd storage, fsync,
//             catalog rows (PullOptions defaults: 4 ranged parts, compression inline)
// CPU seconds are printed beside (this process for the pull, curl + sha256sum for the
// baseline): on a shared machine they say more than wall time.
//   deferred  the same with compress_later set: compressible blobs are stored raw and the
//             separate recompress() time is printed (the background work it leaves)
// Usage: bench_pull [model.gguf ...] (e.g. fixtures from `vkllm dev make-model` at Q4_K_M,
// Q8_0 and F16); without files, one random 200 MB blob (VKLLM_BENCH_PULL_MB sets the size).
// Prints one line per file and mode, then the same as JSON lines.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "registry/manifest.h"
#include "registry/pull.h"
#include "registry/push.h"
#include "tests/support/docker_registry.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace vkllm::registry;
using Clock = std::chrono::steady_clock;

double cpu_seconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string random_blob(size_t size) {
  std::string blob(size, '\0');
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v = rng();
    std::memcpy(blob.data() + i, &v, 8);
  }
  return blob;
}

// Uploads `weights` as a one-layer model and returns its name.
ModelName publish(vkllm::test::DockerRegistry& registry, const std::string& model,
                  const std::string& weights) {
  vkllm::test::TempDir dir("vkllm-bench-pull-src");
  BlobStore store(dir.path());
  Catalog catalog(dir.path() / "catalog.db");
  Manifest manifest;
  BlobInfo w = store.put(weights);
  catalog.add_blob(w);
  manifest.layers.push_back(Layer{std::string(media_type::kModel), w.digest, w.size, {}, {}});
  const std::string config = R"({"model_format":"gguf","architecture":"amd64","os":"linux"})";
  BlobInfo c = store.put(config);
  catalog.add_blob(c);
  manifest.config = Layer{std::string(media_type::kConfig), c.digest, c.size, {}, {}};
  ModelName name = ModelName::parse(registry.host() + "/bench/" + model + ":latest");
  catalog.put_model(name, manifest.to_json());
  push(name, store, catalog, {}, nullptr);
  return name;
}

struct Cost {
  double wall = 0, cpu = 0;
};

// Wall and CPU seconds (curl + sha256sum) for `curl | sha256sum` of the blob; checks the digest.
Cost curl_sha256(const vkllm::test::DockerRegistry& registry, const ModelName& name,
                 const Digest& digest) {
  const std::string url = registry.url() + "/v2/" + name.repository() + "/blobs/" + digest.str();
  const std::string command = "curl -sfL '" + url + "' | sha256sum";
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds(RUSAGE_CHILDREN);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + command);
  char line[160] = {};
  const bool got = fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  const Cost c{seconds_since(t0), cpu_seconds(RUSAGE_CHILDREN) - cpu0};
  if (!got || std::string(line).substr(0, 64) != digest.hex())
    throw std::runtime_error("curl | sha256sum did not reproduce " + digest.str());
  return c;
}

struct PullRun {
  double seconds = 0;
  double cpu_seconds = 0;       // this process: download, hash, sample, store, catalog
  double download_seconds = 0;  // until "verifying sha256 digest"
  double verify_seconds = 0;    // from there to "writing manifest" (hash tail, fsync, rename)
  BlobInfo stored;
  double recompress_seconds = 0;  // deferred only
  BlobInfo recompressed;
};

PullRun pull_once(const ModelName& name, const Digest& digest, bool deferred) {
  vkllm::test::TempDir dir("vkllm-bench-pull");
  BlobStore store(dir.path());
  Catalog catalog(dir.path() / "catalog.db");
  PullOptions options;
  std::vector<Digest> later;
  if (deferred) options.compress_later = [&](const Digest& d) { later.push_back(d); };
  PullRun run;
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds(RUSAGE_SELF);
  pull(name, store, catalog, options, [&](const TransferStatus& line) {
    if (line.status == "verifying sha256 digest") run.download_seconds = seconds_since(t0);
    if (line.status == "writing manifest")
      run.verify_seconds = seconds_since(t0) - run.download_seconds;
  });
  run.seconds = seconds_since(t0);
  run.cpu_seconds = cpu_seconds(RUSAGE_SELF) - cpu0;
  run.stored = *store.info(digest);
  run.recompressed = run.stored;
  for (const auto& d : later) {
    const auto t1 = Clock::now();
    BlobInfo info = store.recompress(d);
    if (d == digest) {
      run.recompress_seconds = seconds_since(t1);
      run.recompressed = info;
    }
  }
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> fixtures;  // label, bytes
  for (int i = 1; i < argc; ++i) {
    std::string label = std::filesystem::path(argv[i]).stem().string();
    fixtures.emplace_back(label, read_file(argv[i]));
  }
  if (fixtures.empty()) {
    const char* mb = std::getenv("VKLLM_BENCH_PULL_MB");
    fixtures.emplace_back("random", random_blob((mb ? std::strtoull(mb, nullptr, 10) : 200) << 20));
  }
  vkllm::test::DockerRegistry registry;
  std::printf("%u cores; MB/s are 10^6 bytes per second\n", std::thread::hardware_concurrency());
  std::printf("%-22s %9s %12s %10s %8s %14s %8s %s\n", "fixture", "MB", "curl|sha MB/s",
              "pull MB/s", "x base", "encoding", "stored", "(deferred: recompress)");
  std::vector<std::string> json;
  for (auto& [label, bytes] : fixtures) {
    std::string model;
    for (char ch : label)
      model += std::isalnum(static_cast<unsigned char>(ch)) ? char(std::tolower(ch)) : '-';
    const ModelName name = publish(registry, model, bytes);
    const Digest digest = Digest::of(std::string_view(bytes));
    const double mb = double(bytes.size()) / 1e6;
    bytes.clear();
    bytes.shrink_to_fit();
    double base = 1e30, base_cpu = 1e30;
    for (int rep = 0; rep < 2; ++rep) {
      const Cost c = curl_sha256(registry, name, digest);
      base = std::min(base, c.wall);
      base_cpu = std::min(base_cpu, c.cpu);
    }
    for (bool deferred : {false, true}) {
      const PullRun r = pull_once(name, digest, deferred);
      const double ratio = double(r.stored.stored_size) / double(r.stored.size);
      std::printf("%-22s %9.1f %12.1f %10.1f %8.2f %14s %8.4f",
                  (label + (deferred ? " deferred" : "")).c_str(), mb, mb / base, mb / r.seconds,
                  base / r.seconds, std::string(to_string(r.stored.encoding)).c_str(), ratio);
      std::printf("  (download %.2f s, tail %.2f s; cpu %.2f s vs %.2f s)", r.download_seconds,
                  r.verify_seconds, r.cpu_seconds, base_cpu);
      if (deferred && r.recompress_seconds > 0)
        std::printf("  recompress %.1f s -> %s %.4f", r.recompress_seconds,
                    std::string(to_string(r.recompressed.encoding)).c_str(),
                    double(r.recompressed.stored_size) / double(r.recompressed.size));
      std::printf("\n");
      char line[512];
      std::snprintf(
          line, sizeof line,
          R"({"fixture":"%s","mode":"%s","mb":%.1f,"baseline_mb_s":%.1f,"pull_mb_s":%.1f,)"
          R"("pull_over_baseline":%.3f,"pull_cpu_s":%.2f,"baseline_cpu_s":%.2f,"download_s":%.2f,"verify_tail_s":%.2f,"encoding":"%s","stored_ratio":%.4f,"recompress_s":%.2f,"recompressed_ratio":%.4f})",
          label.c_str(), deferred ? "deferred" : "inline", mb, mb / base, mb / r.seconds,
          base / r.seconds, r.cpu_seconds, base_cpu, r.download_seconds, r.verify_seconds,
          std::string(to_string(r.stored.encoding)).c_str(), ratio, r.recompress_seconds,
          double(r.recompressed.stored_size) / double(r.recompressed.size));
      json.push_back(line);
    }
  }
  for (const auto& j : json) std::printf("%s\n", j.c_str());
  return 0;
}
