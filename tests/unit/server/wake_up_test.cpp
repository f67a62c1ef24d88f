// WakeUp (server/http/wake_up.h): a notify() from another thread reaches the waiting coroutine,
// one sent before the wait is not lost, and wait_until() ends at its deadline without one.
#include "server/http/wake_up.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace vkllm::http {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

TEST(WakeUp, ANotifyFromAnotherThreadOrBeforeTheWaitWakesTheWaiter) {
  asio::io_context ioc;
  WakeUp wake(ioc.get_executor());
  wake.notify();  // before anyone waits: kept for the first wait
  std::atomic<int> woken{0};
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await wake.wait();
        ++woken;
        co_await wake.wait();  // needs the other thread's notify
        ++woken;
      },
      asio::detached);
  std::thread notifier([&] {
    while (woken.load() < 1) std::this_thread::sleep_for(1ms);
    wake.notify();
  });
  ioc.run();  // returns once the coroutine has ended
  notifier.join();
  EXPECT_EQ(woken.load(), 2);
}

TEST(WakeUp, WaitUntilEndsAtTheDeadlineWithoutANotify) {
  asio::io_context ioc;
  WakeUp wake(ioc.get_executor());
  const auto deadline = std::chrono::steady_clock::now() + 30ms;
  bool ended = false;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await wake.wait_until(deadline);
        ended = true;
      },
      asio::detached);
  ioc.run();
  EXPECT_TRUE(ended);
  EXPECT_GE(std::chrono::steady_clock::now(), deadline);
}

}  // namespace
}  // namespace vkllm::http
