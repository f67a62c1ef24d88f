#include "server/http/until_disconnect.h"

#include <exception>
#include <memory>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace vkllm::http {

namespace asio = boost::asio;

asio::awaitable<bool> until_disconnect(Exchange& ex, asio::awaitable<void> work) {
  struct Gone {
    asio::cancellation_signal signal;
    bool left = false;
  };
  auto gone = std::make_shared<Gone>();
  // The watch calls back on the connection's executor, the one the work runs on.
  ex.on_disconnect([gone] {
    gone->left = true;
    gone->signal.emit(asio::cancellation_type::terminal);
  });
  auto executor = co_await asio::this_coro::executor;
  auto spawned =
      asio::co_spawn(executor, std::move(work),
                     asio::bind_cancellation_slot(gone->signal.slot(), asio::use_awaitable));
  std::exception_ptr error;
  try {
    co_await std::move(spawned);
  } catch (...) {
    error = std::current_exception();
  }
  gone->signal.slot().clear();  // a later disconnect has nothing left to cancel
  // Whatever the work threw once the client left (operation_aborted, or a failure on the way
  // out) has nobody to go to.
  if (error && !gone->left) std::rethrow_exception(error);
  co_return !error && !gone->left;
}

}  // namespace vkllm::http
