// Embedding and rerank work for one loaded embedding model (a model with a pooling type), on
// the model's own engine thread. Requests queue jobs of tokenized inputs from any thread and
// co_await the vectors; the engine thread takes the waiting jobs in arrival order and packs their
// inputs together into Embedder steps (the inputs of many requests share a step), checking for
// cancellation between steps: a job cancelled before its inputs run is dropped. Nothing here
// waits on another model, so embedding work never blocks generation elsewhere.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "engine/runtime/embedder.h"
#include "engine/runtime/model.h"

namespace vkllm::sched {

struct EmbeddingOutcome {
  std::vector<std::vector<float>> vectors;  // one per input, in order (unnormalised)
  std::string error;                        // non-empty: the job failed
  bool unavailable = false;                 // it failed because the model went away (503)
  bool cancelled = false;
  std::chrono::nanoseconds compute{0};  // from the first step with its inputs to the last
};

class EmbeddingQueue;

// One submitted job. Destroying it (or cancel()) drops the job if its inputs have not run yet.
class EmbeddingTicket {
 public:
  struct State;
  EmbeddingTicket() = default;
  explicit EmbeddingTicket(std::shared_ptr<State> state) : state_(std::move(state)) {}
  EmbeddingTicket(EmbeddingTicket&&) noexcept = default;
  EmbeddingTicket& operator=(EmbeddingTicket&&) noexcept = default;
  ~EmbeddingTicket() { cancel(); }

  // Resumes (on the executor given to submit) once the job is done, failed or cancelled.
  boost::asio::awaitable<EmbeddingOutcome> result();
  void cancel();

 private:
  std::shared_ptr<State> state_;
};

class EmbeddingQueue {
 public:
  // Builds the model's Embedder (an Encoder, or a Runner for decoders used as embedders) and
  // starts the engine thread.
  EmbeddingQueue(runtime::Model& model, runtime::EmbedderOptions options = {});
  // The same on the CPU backend; `model` must outlive the queue.
  EmbeddingQueue(const runtime::HostModel& model, runtime::EmbedderOptions options = {});
  ~EmbeddingQueue();  // shutdown("the model was unloaded")
  // Stops the engine thread and waits for it; jobs still queued finish as unavailable with
  // `reason`, and later submits do too. Idempotent.
  void shutdown(const std::string& reason);
  EmbeddingQueue(const EmbeddingQueue&) = delete;
  EmbeddingQueue& operator=(const EmbeddingQueue&) = delete;

  // Thread-safe. Every input must be non-empty and at most max_input_tokens() long.
  EmbeddingTicket submit(std::vector<std::vector<int32_t>> inputs,
                         boost::asio::any_io_executor executor);

  const model::ModelSpec& spec() const { return embedder_.spec(); }
  uint32_t max_input_tokens() const { return embedder_.max_input_tokens(); }
  uint32_t dimensions() const { return embedder_.dimensions(); }
  uint64_t device_bytes() const { return device_bytes_; }
  // False after the engine failed in a way that leaves the model unusable (device lost).
  bool healthy() const { return healthy_.load(); }
  uint32_t waiting() const { return waiting_.load(); }

 private:
  void run();

  runtime::Embedder embedder_;
  uint64_t device_bytes_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<EmbeddingTicket::State>> queue_;
  bool stopping_ = false;
  std::string stop_reason_;
  std::atomic<bool> healthy_{true};
  std::atomic<uint32_t> waiting_{0};
  std::thread thread_;
};

}  // namespace vkllm::sched
