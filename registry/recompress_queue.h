// Background recompression of blobs that pulls stored raw to keep up with the wire
// (PullOptions::compress_later): one blob at a time, on one thread of its own at the lowest CPU
// priority, so loads, requests and pulls come first. Nothing waits for it: a blob being read
// (a model loading from it) keeps being read while it is rewritten (BlobStore::recompress), and
// the catalog row follows the file (ModelStore::recompress_blob).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "registry/digest.h"
#include "registry/model_store.h"

namespace vkllm::registry {

class RecompressQueue {
 public:
  // Failures (a blob that cannot be read or written) go to `report`, one line each; the blob
  // stays as it was (and pending, so the next start tries again).
  using Report = std::function<void(const std::string& line)>;
  // Starts with the blobs the catalog still marks pending (Catalog::recompression_pending): a
  // server stopped before it got to them resumes where it left off.
  explicit RecompressQueue(ModelStore& store, Report report = {});
  // Abandons the blob in progress (it stays raw, the temp file goes) and drops the rest.
  ~RecompressQueue();
  RecompressQueue(const RecompressQueue&) = delete;
  RecompressQueue& operator=(const RecompressQueue&) = delete;

  // Queues a blob; one already queued or in progress is not queued twice.
  void enqueue(const Digest& digest);
  // Returns once nothing is queued or in progress.
  void wait_idle();

 private:
  void run(std::stop_token stop);

  ModelStore& store_;
  Report report_;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<Digest> queue_;
  std::optional<Digest> running_;
  std::jthread worker_;  // last: stopped and joined before the rest goes
};

}  // namespace vkllm::registry
