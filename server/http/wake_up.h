// A wake-up that any thread sends to a waiting coroutine, in place of polling a condition on a
// timer: notify() never blocks (a wake-up already pending is enough), and wait() returns at once
// when one is pending, so a notify() between the waiter's check and its wait is never lost.
// Wake-ups coalesce and may be spurious: the waiter re-checks what it waits for.
#pragma once

#include <chrono>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace vkllm::http {

class WakeUp {
 public:
  explicit WakeUp(const boost::asio::any_io_executor& executor) : channel_(executor, 1) {}

  // Thread-safe.
  void notify() { channel_.try_send(boost::system::error_code{}); }

  // Until a notify() (perhaps one sent before the call).
  boost::asio::awaitable<void> wait() {
    co_await channel_.async_receive(boost::asio::use_awaitable);
  }

  // wait(), or until `deadline` at the latest (a timer notifies then; if the wait ends first,
  // the cancelled timer leaves a spurious wake-up behind).
  boost::asio::awaitable<void> wait_until(std::chrono::steady_clock::time_point deadline) {
    boost::asio::steady_timer timer(channel_.get_executor(), deadline);
    timer.async_wait([this](const boost::system::error_code&) { notify(); });
    co_await wait();
  }

 private:
  boost::asio::experimental::concurrent_channel<void(boost::system::error_code)> channel_;
};

}  // namespace vkllm::http
