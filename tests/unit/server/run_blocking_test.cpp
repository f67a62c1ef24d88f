// run_blocking: the work runs on the pool, the coroutine resumes on its own executor, results and
// exceptions come back, a closure's owned state crosses once and is released once (ASan runs
// this test too), and cancelling the awaiting coroutine asks work that takes a stop token to stop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/async/run_blocking.h"

namespace {

namespace asio = boost::asio;
using vkllm::async::run_blocking;

// Runs `body` as a coroutine on a fresh io_context (this thread) until it finishes.
template <class Body>
void run_on_io(Body body) {
  asio::io_context io;
  std::exception_ptr failed;
  asio::co_spawn(io, std::move(body), [&](std::exception_ptr e) { failed = e; });
  io.run();
  if (failed) std::rethrow_exception(failed);
}

TEST(RunBlocking, WorksOnThePoolAndResumesOnTheCallersThread) {
  asio::thread_pool pool(2);
  const auto io_thread = std::this_thread::get_id();
  std::thread::id work_thread;
  std::thread::id resumed_thread;
  int got = 0;
  run_on_io([&]() -> asio::awaitable<void> {
    got = co_await run_blocking(pool, [&] {
      work_thread = std::this_thread::get_id();
      return 42;
    });
    resumed_thread = std::this_thread::get_id();
  });
  EXPECT_EQ(got, 42);
  EXPECT_NE(work_thread, io_thread);
  EXPECT_EQ(resumed_thread, io_thread);
}

TEST(RunBlocking, VoidWorkCompletesBeforeTheCallerGoesOn) {
  asio::thread_pool pool(1);
  bool done = false;
  bool seen_after = false;
  run_on_io([&]() -> asio::awaitable<void> {
    co_await run_blocking(pool, [&] { done = true; });
    seen_after = done;
  });
  EXPECT_TRUE(seen_after);
}

TEST(RunBlocking, AnExceptionInTheWorkReachesTheCaller) {
  asio::thread_pool pool(1);
  std::string caught;
  run_on_io([&]() -> asio::awaitable<void> {
    try {
      co_await run_blocking(pool, []() -> int { throw std::runtime_error("disk full"); });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
  });
  EXPECT_EQ(caught, "disk full");
}

TEST(RunBlocking, ANamedClosureCarriesItsOwnersAcrossAndReleasesThemOnce) {
  asio::thread_pool pool(2);
  auto shared = std::make_shared<std::string>(200, 'x');
  std::string result;
  run_on_io([&]() -> asio::awaitable<void> {
    // Named and moved in, as the header asks of closures that own something.
    auto work = [s = std::string(100, 'a'), shared, owned = std::make_unique<std::string>("b")] {
      return s.substr(0, 2) + *owned + shared->substr(0, 1);
    };
    auto task = run_blocking(pool, std::move(work));
    result = co_await std::move(task);
  });
  EXPECT_EQ(result, "aabx");
  // The pool thread drops its copy of the closure after it has handed the result back, so the
  // count is only settled once the pool is idle (CI saw 2 here while that thread was still going).
  pool.join();
  // Every copy the call made is gone again: only ours holds the string.
  EXPECT_EQ(shared.use_count(), 1);
}

TEST(RunBlocking, CancellingTheCallerAsksStoppableWorkToStopAndAbortsItsNextAwait) {
  asio::thread_pool pool(1);
  asio::io_context io;
  asio::cancellation_signal signal;
  std::atomic<bool> started{false};
  bool stopped_by_token = false;
  bool next_await_aborted = false;
  auto body = [&]() -> asio::awaitable<void> {
    auto work = [&](std::stop_token stop) {
      started = true;
      // Bounded: a work that never sees the stop would fail the test, not hang it.
      for (int i = 0; i < 5000 && !stop.stop_requested(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return stop.stop_requested();
    };
    auto task = run_blocking(pool, std::move(work));
    stopped_by_token = co_await std::move(task);
    try {
      asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::seconds(5));
      co_await timer.async_wait(asio::use_awaitable);
    } catch (const boost::system::system_error& e) {
      next_await_aborted = e.code() == asio::error::operation_aborted;
    }
  };
  asio::co_spawn(io, body, asio::bind_cancellation_slot(signal.slot(), asio::detached));
  // Cancel from the io thread (where the signal lives) once the work is running.
  asio::steady_timer poll(io);
  std::function<void()> cancel_when_started = [&] {
    poll.expires_after(std::chrono::milliseconds(5));
    poll.async_wait([&](boost::system::error_code) {
      if (started) {
        signal.emit(asio::cancellation_type::terminal);
      } else {
        cancel_when_started();
      }
    });
  };
  cancel_when_started();
  io.run();
  EXPECT_TRUE(stopped_by_token);
  EXPECT_TRUE(next_await_aborted);
}

TEST(RunBlocking, WorkWithAStopTokenRunsToItsEndWhenNobodyCancels) {
  asio::thread_pool pool(1);
  bool stop_seen = true;
  run_on_io([&]() -> asio::awaitable<void> {
    auto work = [](std::stop_token stop) { return stop.stop_requested(); };
    auto task = run_blocking(pool, std::move(work));
    stop_seen = co_await std::move(task);
  });
  EXPECT_FALSE(stop_seen);
}

}  // namespace
