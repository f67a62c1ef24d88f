#include "registry/recompress_queue.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <exception>

namespace vkllm::registry {

RecompressQueue::RecompressQueue(ModelStore& store, Report report)
    : store_(store), report_(std::move(report)), worker_([this](std::stop_token s) { run(s); }) {
  for (const Digest& digest : store_.catalog().recompression_pending()) enqueue(digest);
}

RecompressQueue::~RecompressQueue() {
  worker_.request_stop();
  changed_.notify_all();
}

void RecompressQueue::enqueue(const Digest& digest) {
  {
    std::lock_guard lock(mutex_);
    if (running_ == digest || std::find(queue_.begin(), queue_.end(), digest) != queue_.end())
      return;
    queue_.push_back(digest);
  }
  changed_.notify_all();
}

void RecompressQueue::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !running_; });
}

void RecompressQueue::run(std::stop_token stop) {
  // Linux gives each thread its own nice value: only this one yields.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  for (;;) {
    Digest digest;
    {
      std::unique_lock lock(mutex_);
      if (!changed_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
      digest = queue_.front();
      queue_.pop_front();
      running_ = digest;
    }
    try {
      store_.recompress_blob(digest, stop);
    } catch (const std::exception& e) {
      if (report_) report_("recompressing blob " + digest.str() + ": " + e.what());
    }
    {
      std::lock_guard lock(mutex_);
      running_.reset();
      if (stop.stop_requested()) queue_.clear();
    }
    changed_.notify_all();
  }
}

}  // namespace vkllm::registry
