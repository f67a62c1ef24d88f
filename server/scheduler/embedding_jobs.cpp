#include "server/scheduler/embedding_jobs.h"

#include "engine/runtime/host_model.h"

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/vulkan/vk_error.h"

namespace vkllm::sched {

using std::chrono::steady_clock;

namespace {
EmbeddingOutcome failed(std::string error) {
  EmbeddingOutcome o;
  o.error = std::move(error);
  return o;
}
EmbeddingOutcome unavailable(std::string error) {
  EmbeddingOutcome o = failed(std::move(error));
  o.unavailable = true;
  return o;
}
EmbeddingOutcome cancelled() {
  EmbeddingOutcome o;
  o.cancelled = true;
  return o;
}
}  // namespace

struct EmbeddingTicket::State {
  explicit State(boost::asio::any_io_executor executor) : wake(executor, 1) {}

  std::vector<std::vector<int32_t>> inputs;  // engine thread only after submit
  std::atomic<bool> cancelled{false};
  boost::asio::experimental::concurrent_channel<void(boost::system::error_code)> wake;

  // Engine thread only.
  std::vector<std::vector<float>> vectors;
  size_t next = 0;  // inputs handed to steps so far
  size_t done = 0;  // inputs with their vector
  steady_clock::time_point started;

  // The outcome, handed over under the mutex.
  std::mutex mutex;
  bool finished = false;
  EmbeddingOutcome outcome;

  void finish(EmbeddingOutcome o) {
    {
      std::lock_guard lock(mutex);
      if (finished) return;
      outcome = std::move(o);
      finished = true;
    }
    wake.try_send(boost::system::error_code{});
  }
};

boost::asio::awaitable<EmbeddingOutcome> EmbeddingTicket::result() {
  for (;;) {
    {
      std::lock_guard lock(state_->mutex);
      if (state_->finished) co_return std::move(state_->outcome);
      if (state_->cancelled) co_return cancelled();
    }
    co_await state_->wake.async_receive(boost::asio::use_awaitable);
  }
}

void EmbeddingTicket::cancel() {
  if (!state_) return;
  state_->cancelled = true;
  state_->wake.try_send(boost::system::error_code{});  // wakes a waiting result()
}

EmbeddingQueue::EmbeddingQueue(runtime::Model& model, runtime::EmbedderOptions options)
    : embedder_(model, options) {
  device_bytes_ = model.weight_bytes() + embedder_.device_bytes();
  thread_ = std::thread([this] { run(); });
}

EmbeddingQueue::EmbeddingQueue(const runtime::HostModel& model, runtime::EmbedderOptions options)
    : embedder_(model, options) {
  device_bytes_ = model.weight_bytes() + embedder_.device_bytes();
  thread_ = std::thread([this] { run(); });
}

EmbeddingQueue::~EmbeddingQueue() {
  shutdown("the model was unloaded");
}

void EmbeddingQueue::shutdown(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      stop_reason_ = reason;
    }
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

EmbeddingTicket EmbeddingQueue::submit(std::vector<std::vector<int32_t>> inputs,
                                       boost::asio::any_io_executor executor) {
  auto state = std::make_shared<EmbeddingTicket::State>(executor);
  state->inputs = std::move(inputs);
  state->vectors.resize(state->inputs.size());
  if (state->inputs.empty()) {
    state->finish({});
    return EmbeddingTicket(state);
  }
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      state->finish(unavailable(stop_reason_));
      return EmbeddingTicket(state);
    }
    queue_.push_back(state);
    ++waiting_;
  }
  cv_.notify_one();
  return EmbeddingTicket(state);
}

void EmbeddingQueue::run() {
  using State = EmbeddingTicket::State;
  std::deque<std::shared_ptr<State>> active;  // jobs with inputs still to run, oldest first
  const runtime::EmbedderOptions& lim = embedder_.options();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
      // Newly queued jobs join the next step behind the ones already running.
      while (!queue_.empty()) {
        active.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      waiting_ = 0;
    }
    std::erase_if(active, [](const auto& s) {
      if (!s->cancelled) return false;
      s->finish(cancelled());
      return true;
    });
    if (active.empty()) continue;

    // One step: the next inputs in job order, within the Embedder's step limits.
    std::vector<std::vector<int32_t>> step;
    std::vector<std::pair<State*, size_t>> owners;
    uint32_t tokens = 0;
    for (const auto& s : active) {
      while (s->next < s->inputs.size() && step.size() < lim.max_inputs) {
        const auto n = static_cast<uint32_t>(s->inputs[s->next].size());
        if (!step.empty() && tokens + n > lim.max_batch_tokens) break;
        if (s->next == 0) s->started = steady_clock::now();
        tokens += n;
        owners.emplace_back(s.get(), s->next);
        step.push_back(std::move(s->inputs[s->next++]));
      }
      if (step.size() >= lim.max_inputs || s->next < s->inputs.size()) break;
    }
    try {
      auto vectors = embedder_.embed(step);
      for (size_t i = 0; i < owners.size(); ++i) {
        auto [s, index] = owners[i];
        s->vectors[index] = std::move(vectors[i]);
        ++s->done;
      }
    } catch (const std::exception& e) {
      const auto* vk_error = dynamic_cast<const vk::VulkanError*>(&e);
      if (vk_error && vk_error->result() == VK_ERROR_DEVICE_LOST) healthy_ = false;
      for (auto [s, index] : owners) {
        s->finish(failed(std::string("embedding failed: ") + e.what()));
        s->done = s->inputs.size();  // nothing more runs for it
        s->next = s->inputs.size();
      }
    }
    std::erase_if(active, [](const auto& s) {
      if (s->done < s->inputs.size()) return false;
      EmbeddingOutcome o;
      o.vectors = std::move(s->vectors);
      o.compute =
          std::chrono::duration_cast<std::chrono::nanoseconds>(steady_clock::now() - s->started);
      s->finish(std::move(o));
      return true;
    });
  }
  std::lock_guard lock(mutex_);
  for (auto& s : active) s->finish(unavailable(stop_reason_));
  for (auto& s : queue_) s->finish(unavailable(stop_reason_));
  queue_.clear();
}

}  // namespace vkllm::sched
