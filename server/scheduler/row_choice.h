// Helpers of a step's token choice on the CPU: a row's log-probabilities and argmax, and rows
// sampled in parallel on a small pool of the scheduler's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <latch>
#include <span>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/scheduler/token_stream.h"

namespace vkllm::sched {

// Log-probabilities of one row: the chosen token's and the `top` most likely.
TokenLogprob logprobs_of(std::span<const float> row, int32_t token, int top);

// The index of the row's largest logit (the first among equals).
int32_t best_token(std::span<const float> row);

// The pool rows are sampled on: a few threads, shared by every model's scheduler.
boost::asio::thread_pool& sampling_pool();

// fn(0) .. fn(n - 1), spread over sampling_pool() when there are several.
template <class F>
void parallel_for(size_t n, F&& fn) {
  if (n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::latch done(static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < n; ++i) {
    boost::asio::post(sampling_pool(), [&, i] {
      fn(i);
      done.count_down();
    });
  }
  done.wait();
}

}  // namespace vkllm::sched
