// Runs blocking work (disk, hashing, SQLite, registry transfers) on a worker pool and resumes
// the calling coroutine on its own executor, so the io threads only do network I/O and JSON.
// It lives apart from server/api because server/scheduler uses it too, and the scheduler must not
// depend on the API layer that sits on top of it.
// A caller's closure that owns anything (a string, shared_ptr, unique_ptr) must be a named local
// passed with std::move: GCC 12 destroys a temporary closure inside a co_await expression twice.
#pragma once

#include <type_traits>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace vkllm::async {

template <class F>
auto run_blocking(boost::asio::thread_pool& pool, F work)
    -> boost::asio::awaitable<std::invoke_result_t<F&>> {
  using R = std::invoke_result_t<F&>;
  // The closure and the spawned awaitable are named locals: GCC 12 destroys temporaries inside
  // a co_await expression twice (a captured std::string or shared_ptr then corrupts the heap).
  auto body = [work = std::move(work)]() mutable -> boost::asio::awaitable<R> {
    if constexpr (std::is_void_v<R>) {
      work();
      co_return;
    } else {
      co_return work();
    }
  };
  auto spawned = boost::asio::co_spawn(pool, std::move(body), boost::asio::use_awaitable);
  co_return co_await std::move(spawned);
}

}  // namespace vkllm::async
