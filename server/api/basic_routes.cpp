#include "server/api/basic_routes.h"

#include <nlohmann/json.hpp>

#include "server/http/exchange.h"
#include "server/http/json_text.h"
#include "server/http/static_files.h"

namespace vkllm::api {

using boost::asio::awaitable;
using http::Exchange;
using http::Method;

namespace {
constexpr std::string_view kOllamaApiVersion = "0.33.0";
// (GCC 12 miscompiles braced JSON initialisers inside co_await expressions, so bodies are
// built in plain functions.)
std::string version_body() {
  nlohmann::json j;
  // The Ollama API version vkllm implements (the baseline of ../shared/docs/ollama-compat.md:
  // Ollama main of late Aug 2026, tag v0.33); clients gate features on it. vkllm's own version is
  // `vkllm --version` and every response's X-Vkllm-Version header.
  j["version"] = std::string(kOllamaApiVersion);
  return http::json_text(j);
}
std::string status_body() {
  nlohmann::json j;
  j["cloud"]["disabled"] = true;
  j["cloud"]["source"] = "config";
  return http::json_text(j);
}
}  // namespace

void add_basic_routes(http::Router& router) {
  auto root = [](Exchange& ex) -> awaitable<void> {
    // A person opening the server's address gets the web UI; API clients the liveness text.
    if (co_await http::redirect_browser_to_ui(ex)) co_return;
    co_await ex.respond(200, http::kTextContentType, "Ollama is running");
  };
  auto version = [](Exchange& ex) -> awaitable<void> {
    co_await ex.respond(200, http::kJsonContentType, version_body());
  };
  for (Method m : {Method::get, Method::head}) {
    router.add(m, "/", root);
    router.add(m, "/api/version", version);
  }
  router.add(Method::get, "/api/status", [](Exchange& ex) -> awaitable<void> {
    co_await ex.respond(200, http::kJsonContentType, status_body());
  });
  router.add(Method::post, "/api/me", [](Exchange&) -> awaitable<void> {
    throw http::StatusError(401, "unauthorized");
    co_return;
  });
}

}  // namespace vkllm::api
