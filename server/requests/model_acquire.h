// The model a request runs on, loaded first if it is not resident. A load takes seconds (and may
// wait for memory), so it runs on the service's loader pool, never on an I/O thread; a resident
// model is leased at once. Shared by generation and embeddings.
#pragma once

#include <chrono>
#include <optional>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>

#include "registry/model_store.h"
#include "server/scheduler/model_manager.h"

namespace vkllm::requests {

boost::asio::awaitable<sched::ModelLease> acquire_model(
    sched::ModelManager& models, boost::asio::thread_pool& loaders, const registry::ModelShow& show,
    std::optional<std::chrono::nanoseconds> keep_alive);

}  // namespace vkllm::requests
