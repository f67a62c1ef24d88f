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
// microsecond: workers spin on a generation counter for a short while after each loop (yielding
// the core to anything else runnable on it) and only then sleep on it (futex), so an idle server
// burns no CPU. Tasks are claimed dynamically, so a worker that the OS has not scheduled yet
// never holds the caller up: the others take its share.
//
// A worker descheduled while it holds a task does hold the caller up, for as long as the OS keeps
// it off the core: on a machine busy with other work that can make the pool slower than its
// caller alone. So the pool watches itself: over each window of loops it compares their time with
// what the caller alone would have taken at its own pace, and when the helpers cost more than
// they gave, the next loops run on the caller only (a span that doubles while the machine stays
// busy), after which a window tries the workers again.
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

  // The size of pools made without a count (the process's shared pool among them): what
  // set_default_threads() gave (VKLLM_THREADS, through the configuration module), else the
  // physical cores this process may run on.
  static unsigned default_threads();
  static void set_default_threads(unsigned threads);  // 0: back to the physical cores
  static unsigned physical_cores();

  // Loops run so far on the caller alone because the workers were found to slow it down (not
  // counting loops with one task or called from inside a task).
  uint64_t solo_loops() const { return solo_total_.load(std::memory_order_relaxed); }

 private:
  void worker_main(unsigned index);
  // Claims and runs tasks of the current loop until none are left; returns how many it ran.
  uint32_t run_tasks(unsigned thread);
  // Accounts one parallel loop: `loop_ns` its time, `solo_ns` the caller's estimate of its time
  // alone. Called under call_mutex_.
  void judge(double loop_ns, double solo_ns);

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
  // The self-check, under call_mutex_: the current window's sums, the loops still to run alone
  // and the length of the next solo span.
  uint32_t window_loops_ = 0;
  double window_ns_ = 0, window_solo_ns_ = 0;
  uint32_t solo_left_ = 0;
  uint32_t next_solo_ = 0;
  std::atomic<uint64_t> solo_total_{0};
  std::vector<std::jthread> workers_;
};

}  // namespace vkllm::cpu
