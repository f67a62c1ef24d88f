#include "registry/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_set>

#include "registry/blob_ingest.h"
#include "registry/bounded_json.h"
#include "registry/errors.h"
#include "registry/file_io.h"
#include "registry/manifest.h"
#include "registry/oci_url.h"

namespace vkllm::registry {
namespace {

[[noreturn]] void io_error(const std::filesystem::path& path, const std::string& what) {
  throw RegistryError(ErrorKind::io, what + " " + path.string() + ": " + std::strerror(errno));
}

// Bytes an unprivileged writer may still use on the file system holding `dir`; nullopt when
// the system cannot say.
std::optional<uint64_t> free_bytes(const std::filesystem::path& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

// One blob's resumable download: <partial_dir>/<sha256-hex>.partial holds the raw bytes at
// their offsets, <...>.parts the progress of each range, and the catalog a row saying the
// download exists. The data file is flock'ed for as long as this object lives, so two pulls
// of the same blob never write the same file: the second waits and then finds it done.
class PartialDownload {
 public:
  PartialDownload(BlobStore& store, Catalog& catalog, const Layer& layer,
                  const OciClientOptions& client_options, std::stop_token stop)
      : catalog_(catalog), digest_(layer.digest), size_(layer.size) {
    auto dir = store.partial_dir();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    data_path_ = dir / (digest_.file_name() + ".partial");
    state_path_ = dir / (digest_.file_name() + ".parts");
    fd_ = UniqueFd(::open(data_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!fd_) io_error(data_path_, "cannot open");
    while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) io_error(data_path_, "cannot lock");
      if (stop.stop_requested()) throw OciError(OciErrorKind::cancelled, "cancelled");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Whoever held the lock may have finished (and removed the file we opened).
    if (store.contains(digest_)) {
      already_stored_ = true;
      return;
    }
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) io_error(data_path_, "cannot stat");
    if (st.st_nlink == 0) {  // unlinked by the previous holder: start over on a fresh file
      fd_ = UniqueFd(::open(data_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
      if (!fd_ || ::flock(fd_.get(), LOCK_EX) != 0) io_error(data_path_, "cannot reopen");
    }
    auto record = catalog.find_download(digest_);
    if (record && record->total == size_ && record->temp_path == data_path_ &&
        file_size(fd_.get(), data_path_) == size_ && load_parts()) {
      resumed_ = completed();
      return;
    }
    // The file is sized up front (sparse): a manifest claiming 10^12 bytes must not get that far.
    if (const auto free = free_bytes(dir); free && size_ > *free) {
      std::error_code ignored;
      std::filesystem::remove(data_path_, ignored);
      throw RegistryError(ErrorKind::io, "not enough disk space to pull layer " +
                                             digest_.short_hex() + ": it needs " +
                                             std::to_string(size_) + " bytes, " +
                                             std::to_string(*free) + " are free");
    }
    if (::ftruncate(fd_.get(), 0) != 0 || ::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
      io_error(data_path_, "cannot size");
    }
    parts_ = plan_blob_parts(size_, client_options);
    checkpoint();
  }

  bool already_stored() const { return already_stored_; }
  uint64_t resumed_bytes() const { return resumed_; }
  std::vector<BlobPart>& parts() { return parts_; }
  uint64_t completed() const {
    uint64_t sum = 0;
    for (const auto& part : parts_) sum += part.completed;
    return sum;
  }

  void write(uint64_t offset, std::span<const std::byte> bytes) {
    pwrite_all(fd_.get(), bytes, offset, data_path_);
  }

  // Saves where every range stands (the bytes are already written: a process kill cannot
  // lose them, and a power loss is caught by verification).
  void checkpoint() {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& part : parts_) {
      parts.push_back(
          {{"offset", part.offset}, {"size", part.size}, {"completed", part.completed}});
    }
    nlohmann::json state = {{"digest", digest_.str()}, {"total", size_}, {"parts", parts}};
    auto temp = state_path_;
    temp += ".tmp";
    {
      std::ofstream out(temp, std::ios::trunc);
      out << state.dump();
      if (!out.flush()) io_error(temp, "cannot write");
    }
    std::filesystem::rename(temp, state_path_);
    catalog_.put_download({digest_, data_path_, size_, completed(), Clock::now()});
  }

  int fd() const { return fd_.get(); }
  const std::filesystem::path& data_path() const { return data_path_; }
  const Digest& digest() const { return digest_; }
  // Bytes from offset 0 that are complete: what an ingest may hash already.
  uint64_t contiguous() const {
    uint64_t sum = 0;
    for (const auto& part : parts_) {
      sum += part.completed;
      if (part.completed < part.size) break;
    }
    return sum;
  }

  // Forgets the download: files and catalog row.
  void discard() {
    std::error_code ec;
    std::filesystem::remove(data_path_, ec);
    std::filesystem::remove(state_path_, ec);
    catalog_.remove_download(digest_);
  }

 private:
  bool load_parts() {
    std::ifstream in(state_path_);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto state = parse_bounded_json_or_discarded(text);
    if (!state.is_object() || state.value("digest", "") != digest_.str() ||
        state.value("total", uint64_t{0}) != size_ || !state.contains("parts") ||
        !state["parts"].is_array()) {
      return false;
    }
    std::vector<BlobPart> parts;
    uint64_t next = 0;
    for (const auto& item : state["parts"]) {
      if (!item.is_object()) return false;
      BlobPart part{item.value("offset", ~uint64_t{0}), item.value("size", uint64_t{0}),
                    item.value("completed", ~uint64_t{0})};
      if (part.offset != next || part.completed > part.size) return false;
      next += part.size;
      parts.push_back(part);
    }
    if (next != size_ || parts.empty()) return false;
    parts_ = std::move(parts);
    return true;
  }

  Catalog& catalog_;
  Digest digest_;
  uint64_t size_;
  std::filesystem::path data_path_, state_path_;
  UniqueFd fd_;
  std::vector<BlobPart> parts_;
  bool already_stored_ = false;
  uint64_t resumed_ = 0;
};

OciError with_context(const OciError& e, const std::string& context) {
  return OciError(e.kind(), context + e.what(), e.status(), e.body());
}

}  // namespace

OciRepository oci_repository(const ModelName& name, bool insecure) {
  if (name.scheme == "http" && !insecure) {
    throw RegistryError(ErrorKind::invalid_input, "insecure protocol http");
  }
  bool plain = insecure || name.scheme == "http" || is_loopback_host(name.host);
  return OciRepository{plain ? "http" : "https", name.host, name.repository()};
}

Digest pull(const ModelName& name, BlobStore& store, Catalog& catalog, const PullOptions& options,
            const TransferStatusFn& progress, std::stop_token stop) {
  auto emit = [&](const std::string& status) {
    if (progress) progress(TransferStatus{status, {}, 0, 0});
  };
  auto check_stop = [&] {
    if (stop.stop_requested()) throw OciError(OciErrorKind::cancelled, "cancelled");
  };
  OciRepository repo = oci_repository(name, options.insecure);
  OciClient client(options.client);

  emit("pulling manifest");
  OciManifest fetched;
  try {
    fetched = client.get_manifest(repo, name.tag, stop);
  } catch (const OciError& e) {
    if (e.kind() == OciErrorKind::http && e.status() == 404) {
      throw OciError(OciErrorKind::http, "pull model manifest: file does not exist", 404, e.body());
    }
    if (e.kind() == OciErrorKind::cancelled) throw;
    throw with_context(e, "pull model manifest: ");
  }
  Manifest manifest = Manifest::parse(fetched.bytes);
  for (const auto& layer : manifest.layers) {
    if (layer.media_type == media_type::kTensor) {
      throw RegistryError(ErrorKind::invalid_input, "model " + name.display() +
                                                        " stores its weights as safetensors tensor "
                                                        "layers (" +
                                                        std::string(media_type::kTensor) +
                                                        "), which vkllm cannot run");
    }
  }

  // Layers in manifest order, then the config; a digest listed twice is fetched once.
  std::vector<const Layer*> blobs;
  std::unordered_set<Digest> seen;
  for (const auto& layer : manifest.layers) {
    if (seen.insert(layer.digest).second) blobs.push_back(&layer);
  }
  if (seen.insert(manifest.config.digest).second) blobs.push_back(&manifest.config);

  // A blob being downloaded and, on another thread, hashed and stored as its bytes arrive.
  struct Fresh {
    std::unique_ptr<PartialDownload> download;
    std::unique_ptr<BlobIngest> ingest;  // destroyed first: it reads the download's file
  };
  const IngestCompression compression =
      options.compress_later ? IngestCompression::deferred : IngestCompression::inline_;
  std::vector<Fresh> fresh;
  for (const Layer* layer : blobs) {
    check_stop();
    std::string status = "pulling " + layer->digest.short_hex();
    ThrottledProgress line(progress, status, layer->digest.str(), layer->size,
                           options.progress_interval);
    if (store.contains(layer->digest)) {
      if (!catalog.find_blob(layer->digest)) {
        if (auto info = store.info(layer->digest)) catalog.add_blob(*info);
      }
      line.update(layer->size);
      continue;
    }
    auto download = std::make_unique<PartialDownload>(store, catalog, *layer, options.client, stop);
    if (download->already_stored()) {  // a concurrent pull finished it while we waited
      if (!catalog.find_blob(layer->digest)) {
        if (auto info = store.info(layer->digest)) catalog.add_blob(*info);
      }
      line.update(layer->size);
      continue;
    }
    line.update(download->completed(), true);
    auto ingest = std::make_unique<BlobIngest>(store, download->fd(), download->data_path(),
                                               layer->size, download->contiguous(), compression);
    auto last_checkpoint = std::chrono::steady_clock::now();
    try {
      client.download_blob(
          repo, layer->digest.str(), download->parts(),
          [&](uint64_t offset, std::span<const std::byte> bytes) {
            download->write(offset, bytes);
          },
          [&](uint64_t completed) {
            // Saved before it is reported, so what a client saw is never lost to a kill.
            auto now = std::chrono::steady_clock::now();
            if (now - last_checkpoint >= options.checkpoint_interval) {
              download->checkpoint();
              last_checkpoint = now;
            }
            ingest->advance(download->contiguous());
            line.update(completed);
          },
          stop);
    } catch (...) {
      download->checkpoint();  // keep what arrived for the next attempt
      throw;
    }
    download->checkpoint();
    line.update(download->completed());
    fresh.push_back({std::move(download), std::move(ingest)});
  }

  // Every good blob is kept even when another fails, so no finished download lingers as a
  // partial file; the first mismatch is then reported.
  emit("verifying sha256 digest");
  std::exception_ptr first_failure;
  std::vector<Digest> recompress;
  for (auto& [download, ingest] : fresh) {
    check_stop();
    const Digest& want = download->digest();
    BlobIngest::Result result = ingest->finish(want);
    ingest.reset();
    if (!result.stored) {
      download->discard();
      if (!first_failure) {
        first_failure = std::make_exception_ptr(RegistryError(
            ErrorKind::digest_mismatch, "digest mismatch, file must be downloaded again: want " +
                                            want.str() + ", got " + result.digest.str()));
      }
      continue;
    }
    catalog.add_blob(*result.stored);
    // Recorded with the row, not when compress_later runs after the manifest: a server stopped
    // in between still owes this blob its compression when it starts again.
    if (result.worth_recompressing) catalog.mark_recompression_pending(want);
    download->discard();
    if (result.worth_recompressing) recompress.push_back(want);
  }
  if (first_failure) std::rethrow_exception(first_failure);
  check_stop();

  emit("writing manifest");
  auto previous = catalog.find_model(name);
  std::vector<Layer> previous_blobs;
  if (previous) previous_blobs = catalog.manifest_blobs(previous->manifest_digest);
  Digest manifest_digest = catalog.put_model(name, fetched.bytes);

  if (options.prune && previous && previous->manifest_digest != manifest_digest) {
    std::vector<Digest> unused;
    for (const auto& layer : previous_blobs) {
      if (!seen.contains(layer.digest) && catalog.blob_references(layer.digest) == 0 &&
          std::find(unused.begin(), unused.end(), layer.digest) == unused.end()) {
        unused.push_back(layer.digest);
      }
    }
    if (!unused.empty()) {
      emit("removing unused layers");
      for (const auto& digest : unused) {
        if (catalog.remove_blob(digest)) store.remove(digest);
      }
    }
  }
  for (const auto& digest : recompress) options.compress_later(digest);
  emit("success");
  return manifest_digest;
}

}  // namespace vkllm::registry
