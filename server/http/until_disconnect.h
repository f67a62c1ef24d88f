// Runs a request's work so that the client's leaving cancels it, through Asio's cancellation
// slots: the exchange's disconnect watch emits a terminal cancellation on a signal the work is
// bound to, so whatever the work awaits at that moment (the token stream, an embedding job, a
// model load or prompt build on a worker, a socket write) completes with operation_aborted and the
// work unwinds, its RAII handles cancelling what it started (the scheduler's SequenceHandle, the
// EmbeddingTicket). Nothing checks a flag between awaits.
#pragma once

#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "server/http/exchange.h"

namespace vkllm::http {

// True when `work` ran to its end with the client still there; false when the client left
// (the work was cancelled, or finished after it left): nothing more is to be sent. Failures of a
// client still there propagate.
boost::asio::awaitable<bool> until_disconnect(Exchange& ex, boost::asio::awaitable<void> work);

namespace detail {
template <class T>
boost::asio::awaitable<void> keep_result(boost::asio::awaitable<T> work, std::optional<T>& out) {
  out.emplace(co_await std::move(work));
}
}  // namespace detail

// The same for work with a result: empty when the client left.
template <class T>
boost::asio::awaitable<std::optional<T>> until_disconnect(Exchange& ex,
                                                          boost::asio::awaitable<T> work) {
  std::optional<T> result;
  auto kept = detail::keep_result(std::move(work), result);
  auto guarded = until_disconnect(ex, std::move(kept));
  if (!co_await std::move(guarded)) co_return std::nullopt;
  co_return result;
}

}  // namespace vkllm::http
