// Blob store throughput and zstd compression ratio on real GGUF weights of each type
// (f16, q8_0, q4_k_m). Prints per file: stored/original ratio, whether the store kept it
// compressed or raw, and MB/s for storing (hash + compress + fsync), sequential reading
// (parallel decompression) and 64 KiB random reads.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "registry/blob_store.h"

namespace {
namespace fs = std::filesystem;
using vkllm::registry::BlobEncoding;
using vkllm::registry::BlobStore;
using vkllm::registry::BlobStoreOptions;
using vkllm::registry::Digest;

const char* const kFiles[] = {"ref-llama-f16.gguf", "ref-llama-q8_0.gguf", "ref-llama-q4_k_m.gguf"};

const std::string& file_bytes(int index) {
  static std::vector<std::string> cache(std::size(kFiles));
  std::string& bytes = cache[static_cast<size_t>(index)];
  if (bytes.empty()) {
    std::ifstream in(std::string(VKLLM_SHARED_DIR) + "/testdata/models/" + kFiles[index],
                     std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return bytes;
}

fs::path scratch_dir() {
  static fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("vkllm-bench-store-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

BlobStoreOptions options(int level) {
  BlobStoreOptions o;
  o.compression_level = level;
  return o;
}

void BM_Store(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const int level = static_cast<int>(state.range(1));
  const std::string& bytes = file_bytes(index);
  if (bytes.empty()) {
    state.SkipWithError("test model file missing");
    return;
  }
  fs::path root = scratch_dir() / ("store-" + std::to_string(index) + "-" + std::to_string(level));
  BlobStore store(root, options(level));
  Digest digest = Digest::of(bytes);
  vkllm::registry::BlobInfo info;
  for (auto _ : state) {
    store.remove(digest);
    info = store.put(bytes, digest);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(std::string(kFiles[index]) + " level " + std::to_string(level) + " " +
                 std::string(to_string(info.encoding)));
  // With the 3% rule a blob is kept raw; report what zstd alone would have achieved too.
  state.counters["stored_ratio"] = static_cast<double>(info.stored_size) / bytes.size();
  BlobStoreOptions always = options(level);
  always.min_saving = -1.0;  // keep zstd whatever it saves
  BlobStore zstd_store(root / "always", always);
  zstd_store.remove(digest);
  auto z = zstd_store.put(bytes, digest);
  state.counters["zstd_ratio"] = static_cast<double>(z.stored_size) / bytes.size();
  static std::set<std::pair<int, int>> printed;  // the library runs each case more than once
  if (printed.insert({index, level}).second)
    std::printf("%-24s level %d: zstd ratio %.4f (saves %.2f%%), stored as %s\n", kFiles[index],
                level, static_cast<double>(z.stored_size) / bytes.size(),
                100.0 * (1.0 - static_cast<double>(z.stored_size) / bytes.size()),
                std::string(to_string(info.encoding)).c_str());
}

void BM_SequentialRead(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const std::string& bytes = file_bytes(index);
  fs::path root = scratch_dir() / ("read-" + std::to_string(index));
  BlobStoreOptions o;
  o.min_saving = -1.0;  // measure the zstd path even where the store would keep it raw
  BlobStore store(root, o);
  auto info = store.put(bytes, Digest::of(bytes));
  std::vector<std::byte> buffer(1 << 20);
  for (auto _ : state) {
    auto reader = store.open(info.digest);
    while (reader.read(buffer) > 0) {
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
  state.SetLabel(std::string(kFiles[index]) + " zstd-seekable");
}

void BM_RandomRead64K(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  const std::string& bytes = file_bytes(index);
  fs::path root = scratch_dir() / ("read-" + std::to_string(index));
  BlobStoreOptions o;
  o.min_saving = -1.0;
  BlobStore store(root, o);
  auto info = store.put(bytes, Digest::of(bytes));
  auto reader = store.open(info.digest);
  std::mt19937_64 rng(42);
  std::vector<std::byte> buffer(64 << 10);
  for (auto _ : state) {
    uint64_t offset = rng() % (bytes.size() - buffer.size());
    benchmark::DoNotOptimize(reader.read_at(offset, buffer));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffer.size()));
  state.SetLabel(std::string(kFiles[index]) + " zstd-seekable, 4 MiB frames");
}

BENCHMARK(BM_Store)
    ->ArgsProduct({{0, 1, 2}, {1, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);
BENCHMARK(BM_SequentialRead)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RandomRead64K)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ignored;
  fs::remove_all(scratch_dir(), ignored);
  return 0;
}
