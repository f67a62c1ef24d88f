// Ollama's model-management routes over the registry's ModelStore: /api/tags, /api/show,
// /api/copy, /api/delete, HEAD|POST /api/blobs/:digest, /api/create, /api/pull, /api/push.
// Handlers only translate JSON ↔ registry calls (run on worker pools) and map errors to
// Ollama's statuses and messages (compat §1.9-1.15).
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "registry/model_store.h"
#include "server/api/progress_stream.h"
#include "server/http/router.h"

namespace vkllm::api {

struct TransferRequest {  // /api/pull and /api/push
  registry::ModelName name;
  bool insecure = false;
};
// Pull or push with progress lines (ProgressResponse objects) sent through `emit`.
using TransferFn =
    std::function<void(const TransferRequest&, const Emit& emit, std::stop_token stop)>;

struct ModelApi {
  registry::ModelStore& store;
  boost::asio::thread_pool& workers;    // short blocking calls (SQLite, small reads, hashing)
  boost::asio::thread_pool& transfers;  // long operations with progress (create, pull, push)
  TransferFn pull;                      // empty: /api/pull answers 501
  TransferFn push;
};

void add_model_routes(http::Router& router, ModelApi& api);

// The full name a request refers to, resolved against installed models case-insensitively.
// Throws StatusError(400, "invalid model name") for a malformed name.
registry::ModelName parse_model_name(const std::string& text);

}  // namespace vkllm::api
