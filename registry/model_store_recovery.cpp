// ModelStore::recover() (catalog and files agree again after a crash) and
// import_ollama_store() (models copied in from an Ollama store): the operations that rebuild
// catalog rows from what is on disk rather than from an API request.
#include "registry/model_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "registry/errors.h"
#include "registry/file_io.h"

namespace vkllm::registry {
namespace fs = std::filesystem;

namespace {

Clock::time_point file_mtime(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Clock::now();
  auto ns = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(ns));
}

}  // namespace

RecoveryReport ModelStore::recover() {
  std::lock_guard lock(gc_mutex_);
  RecoveryReport report;
  report.temp_files_removed = blobs_->remove_temp_files();

  std::set<Digest> rows;
  for (const auto& blob : catalog_->blobs()) {
    if (blobs_->contains(blob.digest)) {
      rows.insert(blob.digest);
      continue;
    }
    // The file is gone: drop every model that needs it, then the row.
    for (const auto& model : catalog_->models()) {
      auto used = catalog_->manifest_blobs(model.manifest_digest);
      if (std::any_of(used.begin(), used.end(),
                      [&](const Layer& l) { return l.digest == blob.digest; })) {
        catalog_->remove_model(model.name);
        report.models_removed.push_back(model.name.display());
      }
    }
    if (catalog_->blob_references(blob.digest) == 0 && catalog_->remove_blob(blob.digest))
      ++report.blob_rows_removed;
  }
  // A file under a final name is complete (it was verified before the rename), so a file
  // without a row is a crash between rename and row commit: adopt it.
  for (const auto& blob : blobs_->list()) {
    if (rows.contains(blob.digest)) continue;
    catalog_->add_blob(blob);
    ++report.blob_rows_added;
  }

  std::vector<std::string> live_prefixes;
  const auto abandoned_before = Clock::now() - kAbandonedDownloadGrace;
  for (const auto& download : catalog_->downloads()) {
    std::error_code error;
    // Nobody resumed it within the grace period: its (possibly huge, sparse) file goes too.
    if (!fs::exists(download.temp_path, error) || download.updated_at < abandoned_before) {
      catalog_->remove_download(download.digest);
      ++report.downloads_removed;
    } else {
      // The download's own files (data, part state) are named after its digest.
      live_prefixes.push_back(download.digest.file_name());
      live_prefixes.push_back(download.temp_path.filename().string());
    }
  }
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(blobs_->partial_dir(), error)) {
    std::string name = entry.path().filename().string();
    bool live = std::any_of(live_prefixes.begin(), live_prefixes.end(),
                            [&](const std::string& prefix) { return name.starts_with(prefix); });
    std::error_code ignored;
    if (!live && fs::remove_all(entry.path(), ignored) > 0) ++report.downloads_removed;
  }
  return report;
}

ImportReport ModelStore::import_ollama_store(const fs::path& ollama_root,
                                             const StatusCallback& status) {
  ImportReport report;
  fs::path manifests = ollama_root / "manifests";
  std::error_code error;
  if (!fs::is_directory(manifests, error))
    throw RegistryError(ErrorKind::not_found,
                        "no Ollama manifests directory at " + manifests.string());
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(manifests, error);
       it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) break;
    if (it->is_regular_file() && it.depth() == 3) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    fs::path rel = fs::relative(file, manifests);
    std::vector<std::string> parts;
    for (const auto& p : rel) parts.push_back(p.string());
    try {
      auto name = ModelName::parse(parts[0] + "/" + parts[1] + "/" + parts[2] + ":" + parts[3]);
      std::ifstream in(file, std::ios::binary);
      std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Manifest manifest = Manifest::parse(json);
      for (const auto& layer : manifest.layers)
        if (layer.media_type == media_type::kTensor)
          throw RegistryError(ErrorKind::invalid_input,
                              "safetensors tensor-layer models are not supported");
      if (status) status("importing " + name.display());
      for (const Digest& digest : manifest.blob_digests()) {
        if (has_blob(digest)) {
          ++report.blobs_skipped;
          continue;
        }
        fs::path source = ollama_root / "blobs" / digest.file_name();
        if (!fs::is_regular_file(source, error))
          throw RegistryError(ErrorKind::not_found, "blob " + source.string() + " is missing");
        put_blob_file(source, digest);
        ++report.blobs_copied;
      }
      {
        std::lock_guard lock(gc_mutex_);
        commit_model_locked(name, json, file_mtime(file), false);
      }
      report.models.push_back(name.display());
    } catch (const std::exception& e) {
      report.failures.push_back(file.string() + ": " + e.what());
    }
  }
  return report;
}

}  // namespace vkllm::registry
