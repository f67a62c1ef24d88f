// Runs blocking work (disk, hashing, SQLite, registry transfers, prompt building) on a worker
// pool and resumes the calling coroutine on its own executor, so the io threads only do network
// I/O and JSON. It lives apart from server/api because server/scheduler and server/requests use
// it too, and they must not depend on the API layer that sits on top of them.
//
// Cancellation (Asio's per-operation cancellation, e.g. the client leaving:
// http/until_disconnect.h) cannot stop work already running on a worker; work that takes a
// std::stop_token is asked to stop through it and can give up between its pieces. Either way the
// caller resumes once the work returns (its result or exception), and its next co_await of an
// operation throws operation_aborted.
//
// A caller's closure that owns anything (a string, shared_ptr, unique_ptr) must be a named local
// passed with std::move: GCC 12 destroys a temporary closure inside a co_await expression twice.
#pragma once

#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace vkllm::async {

namespace detail {

// The work's result type, whether or not it takes a stop token.
template <class F>
struct BlockingResult {
  using type = std::invoke_result_t<F&>;
};
template <class F>
requires std::invocable<F&, std::stop_token>
struct BlockingResult<F> {
  using type = std::invoke_result_t<F&, std::stop_token>;
};

template <class F>
auto call_work(F& work, std::stop_token stop) {
  if constexpr (std::invocable<F&, std::stop_token>) {
    return work(std::move(stop));
  } else {
    return work();
  }
}

// The result carried back to the caller's executor: void work carries nothing.
template <class R>
using Carried = std::conditional_t<std::is_void_v<R>, std::monostate, std::optional<R>>;

}  // namespace detail

template <class F>
auto run_blocking(boost::asio::thread_pool& pool, F work)
    -> boost::asio::awaitable<typename detail::BlockingResult<F>::type> {
  namespace asio = boost::asio;
  using R = typename detail::BlockingResult<F>::type;
  using Carried = detail::Carried<R>;
  auto initiate = [&pool](auto handler, F work) {
    auto stop = std::make_shared<std::stop_source>();
    auto slot = asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) {
      slot.assign([stop](asio::cancellation_type) { stop->request_stop(); });
    }
    auto guard = asio::make_work_guard(asio::get_associated_executor(handler));
    auto run = [handler = std::move(handler), work = std::move(work), stop,
                guard = std::move(guard)]() mutable {
      std::exception_ptr error;
      Carried result;
      try {
        if constexpr (std::is_void_v<R>) {
          detail::call_work(work, stop->get_token());
        } else {
          result.emplace(detail::call_work(work, stop->get_token()));
        }
      } catch (...) {
        error = std::current_exception();
      }
      auto executor = guard.get_executor();
      auto complete = [handler = std::move(handler), error, result = std::move(result)]() mutable {
        // Back on the caller's executor, where its slot may be touched.
        asio::get_associated_cancellation_slot(handler).clear();
        std::move(handler)(error, std::move(result));
      };
      asio::dispatch(executor, std::move(complete));
    };
    asio::post(pool, std::move(run));
  };
  auto op = asio::async_initiate<const asio::use_awaitable_t<>, void(std::exception_ptr, Carried)>(
      std::move(initiate), asio::use_awaitable, std::move(work));
  Carried result = co_await std::move(op);
  if constexpr (!std::is_void_v<R>) co_return std::move(*result);
}

}  // namespace vkllm::async
