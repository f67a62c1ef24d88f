// Long operations that report progress (create, pull, push): the work runs on a worker pool
// and emits Ollama ProgressResponse objects; the handler streams them as NDJSON, or with
// stream:false answers only the last one. A failure becomes {"error": ...}: a final line once
// streaming began, else the error's status (http::status_error_of()). If the client goes away, the
// stop token fires (and further emits are dropped) so the work can stop early.
#pragma once

#include <functional>
#include <stop_token>

#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "server/http/exchange.h"

namespace vkllm::api {

// Never throws; safe to call from any thread.
using Emit = std::function<void(const nlohmann::json& progress)>;
using ProgressWork = std::function<void(const Emit& emit, std::stop_token stop)>;

boost::asio::awaitable<void> run_with_progress(http::Exchange& ex, boost::asio::thread_pool& pool,
                                               bool stream, ProgressWork work);

// Stops every running operation (closes their streams, fires their stop tokens); for shutdown,
// so worker pools can be joined.
void cancel_progress_operations();

// {"status": status}
nlohmann::json status_line(const std::string& status);

}  // namespace vkllm::api
