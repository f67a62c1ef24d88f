// A read-only OCI distribution view of the local store, so one vkllm (or docker-registry
// clients) can pull from another: GET /v2/, GET|HEAD /v2/<ns>/<model>/manifests/<tag|digest>
// (the verbatim manifest bytes) and GET|HEAD /v2/<ns>/<model>/blobs/<digest> with Range
// support. Writes answer 405 UNSUPPORTED. Repositories map to installed models by namespace,
// model and tag, preferring the default registry host, then the request's Host.
#pragma once

#include "server/api/model_routes.h"

namespace vkllm::api {

void add_oci_view_routes(http::Router& router, ModelApi& api);

// A parsed "Range: bytes=..." against a blob of `size` bytes: [first, last] inclusive.
struct ByteRange {
  uint64_t first = 0, last = 0;
};
// nullopt without a usable single range (absent header → whole blob by the caller);
// throws StatusError(416) when the range cannot be satisfied.
std::optional<ByteRange> parse_range(const std::string& header, uint64_t size);

}  // namespace vkllm::api
