#include "engine/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vkllm::cpu {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnceWithValidThreadIndices) {
  for (unsigned threads : {1u, 2u, 3u, 5u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (uint32_t n : {0u, 1u, 2u, 7u, 64u, 1000u}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<bool> bad_thread{false};
      pool.parallel_for(n, [&](uint32_t task, unsigned thread) {
        if (thread >= pool.size()) bad_thread = true;
        hits[task].fetch_add(1);
      });
      EXPECT_FALSE(bad_thread);
      for (uint32_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPool, ThreadIndexIsExclusiveWhileATaskRuns) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> busy(pool.size());
  std::atomic<bool> clash{false};
  for (int rep = 0; rep < 50; ++rep) {
    pool.parallel_for(64, [&](uint32_t, unsigned thread) {
      if (busy[thread].fetch_add(1) != 0) clash = true;
      volatile int spin = 0;
      for (int i = 0; i < 200; ++i) spin = spin + i;
      busy[thread].fetch_sub(1);
    });
  }
  EXPECT_FALSE(clash);
}

TEST(ThreadPool, ManyBackToBackLoopsSeeAllPreviousWrites) {
  ThreadPool pool(3);
  std::vector<uint64_t> data(257, 0);
  // Each loop reads what the previous loop wrote, so a loop that returned early or a stale
  // worker running an old loop's task shows up as a wrong sum.
  for (uint64_t round = 1; round <= 2000; ++round) {
    pool.parallel_for(static_cast<uint32_t>(data.size()),
                      [&](uint32_t task, unsigned) { data[task] += round; });
  }
  uint64_t want = 2000ull * 2001ull / 2;
  for (uint64_t v : data) ASSERT_EQ(v, want);
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  ThreadPool pool(3);
  std::atomic<int> count{0};
  for (int rep = 0; rep < 3; ++rep) {
    // Longer than the spin window, so the workers are asleep on the futex when the loop starts.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pool.parallel_for(100, [&](uint32_t, unsigned) { count.fetch_add(1); });
  }
  EXPECT_EQ(count.load(), 300);
}

TEST(ThreadPool, ExceptionsReachTheCallerAndThePoolStaysUsable) {
  ThreadPool pool(3);
  for (uint32_t bad : {0u, 5u, 63u}) {
    EXPECT_THROW(pool.parallel_for(64,
                                   [&](uint32_t task, unsigned) {
                                     if (task == bad) throw std::runtime_error("task failed");
                                   }),
                 std::runtime_error);
  }
  std::atomic<int> count{0};
  pool.parallel_for(64, [&](uint32_t, unsigned) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 64);
}

TEST(ThreadPool, NestedLoopsRunSeriallyOnTheTaskThread) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(8 * 8);
  std::atomic<bool> wrong_thread{false};
  pool.parallel_for(8, [&](uint32_t outer, unsigned thread) {
    pool.parallel_for(8, [&](uint32_t inner, unsigned inner_thread) {
      if (inner_thread != thread) wrong_thread = true;
      hits[outer * 8 + inner].fetch_add(1);
    });
  });
  EXPECT_FALSE(wrong_thread);
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, CallsFromSeveralThreadsTakeTurns) {
  ThreadPool pool(2);
  std::atomic<uint64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        pool.parallel_for(16, [&](uint32_t task, unsigned) { total.fetch_add(task); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 3ull * 200ull * (15ull * 16ull / 2));
}

// VKLLM_THREADS reaches the pools through set_default_threads (the configuration module parses
// it); 0 goes back to the physical cores.
TEST(ThreadPool, DefaultThreadsFollowTheConfiguredCount) {
  const unsigned cores = ThreadPool::physical_cores();
  EXPECT_GE(cores, 1u);
  EXPECT_LE(cores, std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool::set_default_threads(3);
  EXPECT_EQ(ThreadPool::default_threads(), 3u);
  EXPECT_EQ(ThreadPool().size(), 3u);
  ThreadPool::set_default_threads(0);
  EXPECT_EQ(ThreadPool::default_threads(), cores);
}

// A worker that the OS keeps off its core while it holds a task stalls every loop it takes part
// in (a sleep stands in for the descheduling): the pool notices within a window of loops, runs the
// next ones on the caller alone, and afterwards gives the workers another try.
TEST(ThreadPool, WorkersThatStallTheCallerAreLeftOutForAWhile) {
  ThreadPool pool(2);
  auto busy = [](std::chrono::microseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  int loops = 0;
  for (; pool.solo_loops() == 0 && loops < 4 * 64; ++loops) {
    pool.parallel_for(8, [&](uint32_t, unsigned thread) {
      if (thread == 0) {
        busy(std::chrono::microseconds(30));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      }
    });
  }
  ASSERT_EQ(pool.solo_loops(), 1u) << "still using the stalling worker after " << loops << " loops";
  // The solo span: every task on the caller, nested loops serial there too.
  std::atomic<bool> off_caller{false};
  for (int i = 1; i < 256; ++i) {
    pool.parallel_for(8, [&](uint32_t, unsigned thread) {
      if (thread != 0) off_caller = true;
      pool.parallel_for(2, [&](uint32_t, unsigned inner) {
        if (inner != 0) off_caller = true;
      });
    });
  }
  EXPECT_FALSE(off_caller);
  EXPECT_EQ(pool.solo_loops(), 256u);
  // Then a trial window with the workers again.
  std::atomic<int> count{0};
  pool.parallel_for(8, [&](uint32_t, unsigned) { count.fetch_add(1); });
  EXPECT_EQ(count.load(), 8);
  EXPECT_EQ(pool.solo_loops(), 256u);
}

}  // namespace
}  // namespace vkllm::cpu
