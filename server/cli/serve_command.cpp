// `vkllm serve`: the HTTP server on OLLAMA_HOST (default 127.0.0.1:11434) over the model store
// at OLLAMA_MODELS.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "engine/engine_version.h"
#include "registry/env_value.h"
#include "registry/insecure_registries.h"
#include "registry/model_store.h"
#include "registry/recompress_queue.h"
#include "server/api/anthropic_routes.h"
#include "server/api/basic_routes.h"
#include "server/api/embed_routes.h"
#include "server/api/health_routes.h"
#include "server/api/inference_routes.h"
#include "server/api/model_routes.h"
#include "server/api/oci_view.h"
#include "server/api/openai_routes.h"
#include "server/api/progress_stream.h"
#include "server/api/registry_transfers.h"
#include "server/cli/commands.h"
#include "server/http/server.h"
#include "server/http/static_files.h"
#include "server/models/model_reference.h"
#include "server/scheduler/embedding_service.h"
#include "server/scheduler/generation.h"
#include "server/scheduler/model_manager.h"
#include "server/scheduler/preloader.h"

namespace vkllm::cli {
namespace {

void log_line(const std::string& line) {
  std::cerr << "vkllm: " << line << std::endl;
}

// VKLLM_PRELOAD: model names, comma-separated (blanks around them ignored). Throws naming a
// malformed one, so a replica with a typo in its configuration fails at once.
std::vector<registry::ModelName> preload_from_env() {
  const std::string list = registry::env_value("VKLLM_PRELOAD");
  std::vector<registry::ModelName> names;
  size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) {
      std::optional<registry::ModelName> name;
      try {
        name = models::parse_model_reference(item);
      } catch (const std::exception& e) {
        throw std::runtime_error("VKLLM_PRELOAD: '" + item + "': " + e.what());
      }
      if (!name) throw std::runtime_error("VKLLM_PRELOAD: invalid model name '" + item + "'");
      const bool listed = std::any_of(names.begin(), names.end(),
                                      [&](const auto& n) { return n.same_model(*name); });
      if (!listed) names.push_back(std::move(*name));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

registry::InsecureRegistries insecure_registries_from_env() {
  try {
    return registry::InsecureRegistries::parse(registry::env_value("VKLLM_INSECURE_REGISTRIES"));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("VKLLM_INSECURE_REGISTRIES: ") + e.what());
  }
}

// A whole number of seconds, 0 to one hour; anything else is refused at start-up.
long parse_grace_seconds(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 0 || v > 3600) {
    throw std::invalid_argument(
        "VKLLM_SHUTDOWN_GRACE must be a whole number of seconds (0-3600), "
        "not \"" +
        text + "\"");
  }
  return v;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Start the server (Ollama-, OpenAI- and Anthropic-compatible HTTP API).\n"
      "Environment: OLLAMA_HOST (bind address, default 127.0.0.1:11434), OLLAMA_ORIGINS (extra "
      "CORS origins, comma-separated), OLLAMA_MODELS (model store), OLLAMA_NOPRUNE, "
      "OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL, "
      "OLLAMA_MAX_LOADED_MODELS, OLLAMA_MAX_QUEUE, OLLAMA_CONTEXT_LENGTH, VKLLM_API_KEY (require "
      "'Authorization: Bearer KEY' or 'x-api-key: KEY'; a key or @FILE with one per line), "
      "VKLLM_KV_BUDGET, "
      "VKLLM_SHUTDOWN_GRACE (seconds requests may finish after SIGTERM, default 10), "
      "VKLLM_DEVICE (auto: a GPU, else the CPU backend; cpu; vulkan; vulkan:<index>), "
      "VKLLM_PRELOAD (models to pull if missing, load and keep loaded; comma-separated), "
      "VKLLM_INSECURE_REGISTRIES (host[:port] list reached over plain HTTP).\n"
      "GET /livez answers while the server runs; GET /readyz is 200 once the preloaded models "
      "are loaded, 503 while loading, with a full queue or draining.\n"
      "The web UI is at /ui/; the store is also served read-only as an OCI registry at /v2/.");
  cmd->alias("start");
  cmd->callback([] {
    run_command([] {
      const std::vector<registry::ModelName> preload = preload_from_env();
      const registry::InsecureRegistries insecure = insecure_registries_from_env();
      http::ServerConfig config{http::ollama_host_from_env(),
                                http::OriginPolicy::from_env(),
                                http::ApiKeyPolicy::from_env(),
                                {},
                                4,
                                true};
      // VKLLM_SHUTDOWN_GRACE: seconds running requests get to finish after SIGTERM (default
      // 10); keep it below an orchestrator's own grace (Kubernetes: 30 s).
      if (const std::string grace = http::env_value("VKLLM_SHUTDOWN_GRACE"); !grace.empty()) {
        config.limits.shutdown_grace = std::chrono::seconds(parse_grace_seconds(grace));
      }
      // Readiness (/readyz) turns false the moment the graceful stop begins (SIGTERM).
      std::atomic<bool> draining{false};
      config.on_shutdown.draining = [&draining] { draining = true; };
      registry::ModelStore store(registry::BlobStore::default_root());
      store.claim_sole_writer();  // a second server on the same store refuses to start
      // Compiled pipelines are kept beside the store, so a restart skips shader compilation.
      if (!std::getenv("VKLLM_PIPELINE_CACHE")) {
        ::setenv("VKLLM_PIPELINE_CACHE", (store.root() / "pipeline-cache").c_str(), 0);
      }
      // Pulls store compressible blobs raw to keep up with the wire; this compresses them after.
      registry::RecompressQueue recompress(
          store, [](const std::string& line) { std::cerr << "vkllm: " << line << std::endl; });
      boost::asio::thread_pool workers(4), transfers(8);
      api::ModelApi models{store, workers, transfers,
                           api::registry_pull(store, &recompress, insecure),
                           api::registry_push(store, insecure)};
      sched::ModelManager manager(store);
      const sched::ServiceOptions service_options = sched::ServiceOptions::from_env();
      sched::GenerationService service(store, manager, workers, service_options);
      api::InferenceApi inference{service, store};
      sched::EmbeddingService embedding(service, manager, workers);
      api::EmbedApi embed{embedding};
      api::OpenAiApi openai{service, store, workers};
      // VKLLM_PRELOAD: pulled through the same registry code as /api/pull, then pinned.
      auto pull_preload = [pull = models.pull](const registry::ModelName& name,
                                               std::stop_token stop) {
        pull(
            api::TransferRequest{name, false}, [](const nlohmann::json&) {}, stop);
      };
      sched::Preloader preloader(store, manager, preload, pull_preload, log_line);
      api::AnthropicApi anthropic{service};
      http::Router router;
      api::add_basic_routes(router);
      api::add_health_routes(router, {preloader, [&service] { return service.queued(); },
                                      service_options.max_queue, draining});
      api::add_model_routes(router, models);
      api::add_inference_routes(router, inference);
      api::add_embed_routes(router, embed);
      api::add_openai_routes(router, openai);
      api::add_anthropic_routes(router, anthropic);
      api::add_oci_view_routes(router, models);
      http::add_static_routes(router, "/ui");
      // Shutdown (SIGTERM): requests get the grace to finish; then the engines stop and the
      // requests still on them end with a final error line or a 503. The engines must stop
      // before the server's io_context goes, since their threads wake requests on it.
      const std::string stopping = "server is shutting down";
      config.on_shutdown.grace_expired = [&manager, &stopping] {
        manager.shutdown_engines(stopping);
        api::cancel_progress_operations();
      };
      http::Server server(std::move(config), std::move(router));
      server.listen();
      std::cerr << "vkllm: models in " << store.root().string() << std::endl;
      std::cerr << "vkllm: Listening on " << server.bound_address() << " (version "
                << vkllm::version() << ")" << std::endl;
      server.run(true);
      manager.shutdown_engines(stopping);
      preloader.stop();  // cancels a pull, releases the pins before the models are unloaded
      api::cancel_progress_operations();
      workers.stop();
      transfers.stop();
      workers.join();
      transfers.join();
      service.join_loaders();
      manager.unload_all();
      std::cerr << "vkllm: server stopped" << std::endl;
      return 0;
    });
  });
}

}  // namespace vkllm::cli
