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
#include "server/config/settings.h"
#include "server/config/settings_table.h"
#include "server/http/server.h"
#include "server/http/static_files.h"
#include "server/models/model_reference.h"
#include "server/requests/embedding_service.h"
#include "server/requests/generation.h"
#include "server/scheduler/model_manager.h"
#include "server/scheduler/preloader.h"

namespace vkllm::cli {
namespace {

void log_line(const std::string& line) {
  std::cerr << "vkllm: " << line << std::endl;
}

// The settings table (server/config/settings_table.h) as `serve --help` shows it.
std::string settings_help() {
  std::string text = "Settings (environment variables; docs/configuration.md):\n";
  std::string_view group;
  for (const config::SettingInfo& s : config::settings_table()) {
    if (s.group != group) {
      group = s.group;
      text += "\n " + std::string(group) + ":\n";
    }
    text += "  " + std::string(s.name);
    if (!s.default_value.empty()) text += " (default " + std::string(s.default_value) + ")";
    text += "\n      " + std::string(s.description) + "\n";
  }
  return text;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Start the server (Ollama-, OpenAI- and Anthropic-compatible HTTP API).\n"
      "GET /livez answers while the server runs; GET /readyz is 200 once the preloaded models "
      "are loaded, 503 while loading, with a full queue or draining.\n"
      "The web UI is at /ui/; the store is also served read-only as an OCI registry at /v2/.");
  cmd->footer(settings_help());
  cmd->alias("start");
  cmd->callback([] {
    run_command([] {
      const config::Settings settings = config::read_settings(config::Environment::from_process());
      for (const std::string& w : settings.warnings) log_line(w);
      config::apply_process_settings(settings.cpu);
      http::ServerConfig server_config{settings.server.host,
                                       http::OriginPolicy(settings.server.extra_origins),
                                       http::ApiKeyPolicy(settings.server.api_keys),
                                       {},
                                       4,
                                       true};
      server_config.limits.shutdown_grace = settings.server.shutdown_grace;
      server_config.limits.max_connections = settings.server.max_connections;
      // Readiness (/readyz) turns false the moment the graceful stop begins (SIGTERM).
      std::atomic<bool> draining{false};
      server_config.on_shutdown.draining = [&draining] { draining = true; };
      registry::ModelStore store(settings.store.root);
      store.set_prune(settings.store.prune);
      store.claim_sole_writer();  // a second server on the same store refuses to start
      // Pulls store compressible blobs raw to keep up with the wire; this compresses them after.
      registry::RecompressQueue recompress(
          store, [](const std::string& line) { std::cerr << "vkllm: " << line << std::endl; });
      boost::asio::thread_pool workers(4), transfers(8);
      api::ModelApi models{
          store, workers, transfers,
          api::registry_pull(store, &recompress, settings.server.insecure_registries),
          api::registry_push(store, settings.server.insecure_registries)};
      sched::ModelManager manager(store, settings.models);
      requests::GenerationService service(store, manager, workers, settings.service);
      api::InferenceApi inference{service, store};
      requests::EmbeddingService embedding(service, manager, workers);
      api::EmbedApi embed{embedding};
      api::OpenAiApi openai{service, store, workers};
      // VKLLM_PRELOAD: pulled through the same registry code as /api/pull, then pinned.
      auto pull_preload = [pull = models.pull](const registry::ModelName& name,
                                               std::stop_token stop) {
        pull(
            api::TransferRequest{name, false}, [](const nlohmann::json&) {}, stop);
      };
      sched::Preloader preloader(store, manager, settings.server.preload, pull_preload, log_line);
      api::AnthropicApi anthropic{service};
      http::Router router;
      api::add_basic_routes(router);
      api::add_health_routes(router, {preloader, [&service] { return service.queued(); },
                                      settings.service.max_queue, draining});
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
      server_config.on_shutdown.grace_expired = [&manager, &stopping] {
        manager.shutdown_engines(stopping);
        api::cancel_progress_operations();
      };
      http::Server server(std::move(server_config), std::move(router));
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
