#include "engine/cpu/thread_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace vkllm::cpu {
namespace {

// How long an idle worker polls before it sleeps: longer than the serial gaps between the
// kernels of one decode step, far shorter than anything a person would notice as load.
constexpr auto kSpin = std::chrono::microseconds(200);
// Polls between clock reads and sched_yield calls while spinning (64 pauses: a few
// microseconds). A yield returns at once when nothing else wants the core, and otherwise lets
// the other work run rather than burn the slice the OS would then take from a busy worker.
constexpr unsigned kPollsPerYield = 64;

// The self-check (see the header): loops per window, the first solo span and its cap. A decode
// step of a 1B model runs ~80 loops, so a solo span starts at a few tokens and a busy machine
// pays a trial window about once per 64 solo tokens.
constexpr uint32_t kWindowLoops = 64;
constexpr uint32_t kFirstSolo = 256;
constexpr uint32_t kMaxSolo = 4096;
// Below this a loop is too short to judge: the caller's few-microsecond measurements of it are
// mostly the clock and the wake-up.
constexpr double kMinJudgedNs = 20e3;

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

thread_local bool t_in_task = false;
thread_local unsigned t_thread = 0;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Raw futex calls: libstdc++'s atomic::wait adds its own spin-and-yield phase and waiter
// bookkeeping on top of the pool's spin, which only costs time here.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

bool read_int(const std::string& path, long& out) {
  std::ifstream f(path);
  return static_cast<bool>(f >> out);
}

}  // namespace

namespace {
std::atomic<unsigned> configured_threads{0};
}  // namespace

void ThreadPool::set_default_threads(unsigned threads) {
  configured_threads = threads;
}

unsigned ThreadPool::default_threads() {
  if (const unsigned n = configured_threads.load()) return n;
  return physical_cores();
}

unsigned ThreadPool::physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    unsigned hw = std::thread::hardware_concurrency();
    return hw ? hw : 1;
  }
  // Hyperthreads share a core's execution units; the matmuls gain nothing from the second one.
  std::set<std::pair<long, long>> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    long core = 0, package = 0;
    if (!read_int(dir + "core_id", core) || !read_int(dir + "physical_package_id", package)) {
      return static_cast<unsigned>(CPU_COUNT(&set));
    }
    cores.emplace(package, core);
  }
  return cores.empty() ? 1 : static_cast<unsigned>(cores.size());
}

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = 1;
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_main(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(wake_);
  // jthread joins.
}

void ThreadPool::worker_main(unsigned index) {
  t_in_task = true;  // a loop started from inside a task runs serially
  t_thread = index;
  // Not wake_'s value now: a thread that starts late must still see the loops (and the stop)
  // that were announced before it ran.
  uint32_t seen = 0;
  while (true) {
    auto deadline = std::chrono::steady_clock::now() + kSpin;
    uint32_t now = seen;
    for (unsigned i = 1;; ++i) {
      now = wake_.load(std::memory_order_acquire);
      if (now != seen) break;
      cpu_relax();
      if (i % kPollsPerYield != 0) continue;
      sched_yield();
      if (std::chrono::steady_clock::now() > deadline) {
        // seq_cst pairs with parallel_for's bump-then-read of sleepers_: either it sees this
        // sleeper and notifies, or wait() sees the bumped counter and returns at once.
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        futex_wait(wake_, seen);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        now = wake_.load(std::memory_order_acquire);
        if (now != seen) break;
        deadline = std::chrono::steady_clock::now() + kSpin;
      }
    }
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    run_tasks(index);
  }
}

uint32_t ThreadPool::run_tasks(unsigned thread) {
  for (uint32_t ran = 0;; ++ran) {
    uint64_t w = work_.fetch_add(1, std::memory_order_acq_rel);
    auto task = static_cast<uint32_t>(w);
    auto n = static_cast<uint32_t>(w >> 32);
    if (task >= n) return ran;
    // A claimed task keeps its loop open until done_ counts it, so fn_ is that loop's function.
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        (*fn_)(task, thread);
      } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::judge(double loop_ns, double solo_ns) {
  if (loop_ns < kMinJudgedNs) return;
  window_ns_ += loop_ns;
  window_solo_ns_ += solo_ns;
  if (++window_loops_ < kWindowLoops) return;
  if (window_ns_ > window_solo_ns_) {
    // The workers cost more than they gave: run alone for a while, longer each time in a row.
    solo_left_ = next_solo_ = next_solo_ ? std::min(2 * next_solo_, kMaxSolo) : kFirstSolo;
  } else {
    next_solo_ = 0;
  }
  window_loops_ = 0;
  window_ns_ = window_solo_ns_ = 0;
}

void ThreadPool::parallel_for(uint32_t n_tasks, const Task& fn) {
  if (n_tasks == 0) return;
  auto serial = [&] {
    for (uint32_t t = 0; t < n_tasks; ++t) fn(t, t_thread);
  };
  if (t_in_task || workers_.empty() || n_tasks == 1) return serial();
  std::lock_guard call_lock(call_mutex_);
  if (solo_left_ > 0) {
    --solo_left_;
    solo_total_.fetch_add(1, std::memory_order_relaxed);
    t_in_task = true;  // a nested loop runs serially, as it would on a worker
    t_thread = 0;
    try {
      serial();
    } catch (...) {
      t_in_task = false;
      throw;
    }
    t_in_task = false;
    return;
  }
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  fn_ = &fn;
  error_ = nullptr;
  failed_.store(false, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  work_.store(uint64_t{n_tasks} << 32, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(wake_);

  t_in_task = true;
  t_thread = 0;
  const uint32_t own = run_tasks(0);
  t_in_task = false;
  const auto own_end = Clock::now();
  // Only tasks already claimed remain; they are short, so spin, but give the core away if a
  // worker holding one has been descheduled.
  for (unsigned i = 1; done_.load(std::memory_order_acquire) != n_tasks; ++i) {
    cpu_relax();
    if (i % kPollsPerYield == 0) sched_yield();
  }
  fn_ = nullptr;
  // The caller alone would have run every task at the pace it ran its own (no estimate when the
  // workers took them all).
  const double loop_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  const double own_ns = std::chrono::duration<double, std::nano>(own_end - start).count();
  judge(loop_ns, own ? own_ns * n_tasks / own : loop_ns);
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace vkllm::cpu
