#include "server/requests/model_acquire.h"

#include <utility>

#include "server/async/run_blocking.h"

namespace vkllm::requests {

boost::asio::awaitable<sched::ModelLease> acquire_model(
    sched::ModelManager& models, boost::asio::thread_pool& loaders, const registry::ModelShow& show,
    std::optional<std::chrono::nanoseconds> keep_alive) {
  if (auto lease = models.try_acquire(show, keep_alive)) co_return std::move(*lease);
  // (A named local closure: see run_blocking.h.)
  auto load = [&models, show, keep_alive] { return models.acquire(show, keep_alive); };
  co_return co_await async::run_blocking(loaders, std::move(load));
}

}  // namespace vkllm::requests
