// The embedded web UI (web/dist) served under a mount point, e.g. /ui/. "/" itself stays
// Ollama's liveness answer ("Ollama is running") for API clients; only a browser opening the
// page (Accept: text/html) is redirected to the UI. Unknown extensionless paths under the mount
// fall back to index.html (the UI routes on the client side).
//
// web/dist holds a precompressed twin "<file>.gz" for compressible files: it is sent with
// Content-Encoding: gzip when the client accepts gzip. Names under assets/ carry a content hash
// (Vite), so they are cached for a year; everything else is revalidated.
#pragma once

#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "server/http/router.h"

namespace vkllm::http {

// Registers GET and HEAD for `mount` (redirects to mount + "/") and mount + "/*path".
void add_static_routes(Router& router, std::string_view mount = "/ui");

// Content-Type for a file name by its extension ("application/octet-stream" if unknown).
std::string_view content_type_for(std::string_view file_name);

// Whether an Accept-Encoding value allows gzip (a "gzip" or "*" coding with q > 0).
bool accepts_gzip(std::string_view accept_encoding);

// Whether an Accept value asks for an HTML page (a browser navigating), as opposed to API
// clients and liveness probes, which send "*/*", "application/json" or nothing.
bool wants_html(std::string_view accept);

// Answers a browser navigating to "/" with a redirect to the UI at `mount` + "/"; returns false
// (and answers nothing) for any other client, which then gets the liveness text.
boost::asio::awaitable<bool> redirect_browser_to_ui(Exchange& ex, std::string_view mount = "/ui");

}  // namespace vkllm::http
