// The embedded web UI (web/dist) served under a mount point, e.g. /ui/. "/" itself stays
// Ollama's liveness answer, so the UI cannot live there. Unknown paths under the mount fall
// back to index.html (the UI routes on the client side).
#pragma once

#include <string_view>

#include "server/http/router.h"

namespace vkllm::http {

// Registers GET and HEAD for `mount` (redirects to mount + "/") and mount + "/*path".
void add_static_routes(Router& router, std::string_view mount = "/ui");

// Content-Type for a file name by its extension ("application/octet-stream" if unknown).
std::string_view content_type_for(std::string_view file_name);

}  // namespace vkllm::http
