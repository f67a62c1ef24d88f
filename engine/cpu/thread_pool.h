// A fixed set of worker threads that run data-parallel loops for the CPU backend's kernels.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vkllm::cpu {

// parallel_for is called a few hundred times per decoded token, so a dispatch must cost about a
// microsecond: workers spin on a generation counter for a short while after each loop and only
// then sleep on it (futex), so an idle server burns no CPU. Tasks are claimed dynamically, so a
// worker that the OS has not scheduled yet never holds the caller up: the others take its share.
class ThreadPool {
 public:
  using Task = std::function<void(uint32_t task, unsigned thread)>;

  // `threads` counts the caller: a pool of 1 runs every loop on the calling thread.
  explicit ThreadPool(unsigned threads = default_threads());
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs fn(task, thread) for every task < n_tasks and returns when all have finished. `thread`
  // is < size() and unique among the calls running at the same time (0 is the caller), so it can
  // index per-thread scratch. The first exception a task throws is rethrown here once all the
  // tasks have stopped (tasks not yet started are skipped). A call from inside a task runs its
  // loop serially on that thread; calls from several outside threads take turns.
  void parallel_for(uint32_t n_tasks, const Task& fn);

  // VKLLM_THREADS when set (a positive integer), else the physical cores this process may run on.
  static unsigned default_threads();

 private:
  void worker_main(unsigned index);
  // Claims and runs tasks of the current loop until none are left.
  void run_tasks(unsigned thread);

  // The current loop's task count (high 32 bits) and next unclaimed task (low 32): one fetch_add
  // claims a task of whatever loop is current, so a worker that wakes late can never run a task
  // of a loop that has already returned.
  std::atomic<uint64_t> work_{0};
  std::atomic<uint32_t> done_{0};      // tasks finished in the current loop
  std::atomic<uint32_t> wake_{0};      // bumped per loop; workers futex-wait on it
  std::atomic<uint32_t> sleepers_{0};  // workers blocked on wake_
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  const Task* fn_ = nullptr;
  std::exception_ptr error_;
  std::mutex error_mutex_;
  std::mutex call_mutex_;  // one loop at a time
  std::vector<std::jthread> workers_;
};

}  // namespace vkllm::cpu
