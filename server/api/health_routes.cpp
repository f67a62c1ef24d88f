#include "server/api/health_routes.h"

#include "server/http/exchange.h"
#include "server/http/json_text.h"

namespace vkllm::api {

using boost::asio::awaitable;
using http::Exchange;
using http::Method;

Readiness readiness(const ReadinessInput& in) {
  Readiness r;
  std::vector<std::string> reasons;
  if (in.draining) reasons.push_back("draining: the server is shutting down");
  if (!in.preload.ready()) {
    std::string why = "preloading: " + std::to_string(in.preload.loaded) + " of " +
                      std::to_string(in.preload.wanted) + " models loaded";
    if (in.preload.failed_attempts > 0) {
      why += " (" + std::to_string(in.preload.failed_attempts) +
             " failed attempts, retrying; the server log says why)";
    }
    reasons.push_back(std::move(why));
  }
  if (in.queued >= in.max_queue) {
    reasons.push_back("queue full: " + std::to_string(in.queued) + " of " +
                      std::to_string(in.max_queue) + " requests waiting");
  }
  r.ready = reasons.empty();
  r.body["ready"] = r.ready;
  r.body["reasons"] = reasons;
  r.body["models"] = {{"preload", in.preload.wanted}, {"loaded", in.preload.loaded}};
  r.body["queue"] = {{"waiting", in.queued}, {"limit", in.max_queue}};
  return r;
}

namespace {
// (GCC 12 miscompiles braced JSON initialisers inside co_await expressions, so bodies are
// built in plain functions.)
std::string live_body() {
  nlohmann::json j;
  j["live"] = true;
  return http::json_text(j);
}
}  // namespace

void add_health_routes(http::Router& router, HealthSources sources) {
  auto live = [](Exchange& ex) -> awaitable<void> {
    co_await ex.respond(200, http::kJsonContentType, live_body());
  };
  auto ready = [sources](Exchange& ex) -> awaitable<void> {
    ReadinessInput in;
    in.preload = sources.preload.status();
    in.queued = sources.queued();
    in.max_queue = sources.max_queue;
    in.draining = sources.draining.load();
    const Readiness r = readiness(in);
    const std::string body = http::json_text(r.body);
    co_await ex.respond(r.ready ? 200 : 503, http::kJsonContentType, body);
  };
  for (Method m : {Method::get, Method::head}) {
    router.add(m, "/livez", live);
    router.add(m, "/readyz", ready);
  }
}

}  // namespace vkllm::api
