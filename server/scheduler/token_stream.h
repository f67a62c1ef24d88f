// The channel between a model's engine thread and the request coroutine awaiting its tokens.
// The engine pushes events without ever blocking; the request co_awaits the next batch of events
// on its own executor. Nothing polls: a push wakes the waiting coroutine through a one-slot Asio
// channel (a wake-up already pending is enough, so pushes never fail or wait), and cancelling the
// waiting coroutine (its cancellation slot) aborts the wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace vkllm::sched {

enum class FinishReason {
  none,
  stop,       // end-of-generation token, or the format is complete
  length,     // num_predict, or the context is full and shifting is off
  cancelled,  // the request went away
  error,      // the engine failed; TokenEvent::error says why
  // The model is going away under the sequence (the server is shutting down): the request
  // should fail with 503, as a client may retry it elsewhere. TokenEvent::error says why.
  unavailable,
};

struct TopLogprob {
  int32_t token;
  float logprob;
};

struct TokenLogprob {
  int32_t token;
  float logprob;
  std::vector<TopLogprob> top;  // most likely first
};

struct TokenEvent {
  std::vector<int32_t> tokens;         // generated tokens, in order (usually one)
  std::vector<TokenLogprob> logprobs;  // one per token when asked for
  FinishReason finish = FinishReason::none;
  std::string error;
  // Set on the event that carries the first generated token and on the final one.
  uint32_t prompt_tokens = 0;               // the prompt as submitted (prefix-cache hits included)
  uint32_t cached_tokens = 0;               // of those, served from the prefix cache
  std::chrono::nanoseconds prompt_eval{0};  // admission to first token
};

class TokenStream {
 public:
  explicit TokenStream(boost::asio::any_io_executor executor) : wake_(executor, 1) {}

  // Engine side: never blocks.
  void push(TokenEvent event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(event));
    }
    wake_.try_send(boost::system::error_code{});  // fails only when a wake-up is already queued
  }

  // Request side: every event pushed since the last call, waiting for at least one.
  boost::asio::awaitable<std::vector<TokenEvent>> next() {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (!events_.empty()) {
          std::vector<TokenEvent> out(std::make_move_iterator(events_.begin()),
                                      std::make_move_iterator(events_.end()));
          events_.clear();
          co_return out;
        }
      }
      co_await wake_.async_receive(boost::asio::use_awaitable);
    }
  }

 private:
  std::mutex mutex_;
  std::deque<TokenEvent> events_;
  boost::asio::experimental::concurrent_channel<void(boost::system::error_code)> wake_;
};

}  // namespace vkllm::sched
