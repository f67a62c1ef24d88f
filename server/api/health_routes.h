// Probes for load balancers and orchestrators (Kubernetes, HAProxy's httpchk):
//   GET|HEAD /livez   200 whenever the HTTP server answers; it never touches models.
//   GET|HEAD /readyz  200 {"ready":true,...} when every VKLLM_PRELOAD model is loaded, the
//                     request queue is below OLLAMA_MAX_QUEUE and the server is not draining;
//                     otherwise 503 with the same object, "ready":false and the reasons.
// Both answer without an API key (probes carry none); their bodies name no model.
// `/` and `/api/version` stay as Ollama has them (Ollama clients use them for health).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/http/router.h"
#include "server/scheduler/preloader.h"

namespace vkllm::api {

struct ReadinessInput {
  sched::Preloader::Status preload;
  uint32_t queued = 0;     // requests waiting for their sequence to start
  uint32_t max_queue = 0;  // OLLAMA_MAX_QUEUE
  bool draining = false;   // SIGTERM received
};

struct Readiness {
  bool ready = false;
  nlohmann::json body;  // {"ready", "reasons":[...], "models":{...}, "queue":{...}}
};

// The /readyz decision, apart from the route so it can be tested alone.
Readiness readiness(const ReadinessInput& in);

struct HealthSources {
  const sched::Preloader& preload;
  std::function<uint32_t()> queued;   // requests waiting (GenerationService::queued)
  uint32_t max_queue = 0;             // OLLAMA_MAX_QUEUE
  const std::atomic<bool>& draining;  // set first thing when the graceful stop begins
};

void add_health_routes(http::Router& router, HealthSources sources);

}  // namespace vkllm::api
