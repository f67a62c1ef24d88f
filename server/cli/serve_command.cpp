// `vkllm serve`: the HTTP server on OLLAMA_HOST (default 127.0.0.1:11434).
#include <iostream>

#include "engine/engine_version.h"
#include "server/api/basic_routes.h"
#include "server/cli/commands.h"
#include "server/http/server.h"
#include "server/http/static_files.h"

namespace vkllm::cli {

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "serve",
      "Start the server (Ollama- and OpenAI-compatible HTTP API).\n"
      "Environment: OLLAMA_HOST (bind address, default 127.0.0.1:11434), OLLAMA_ORIGINS (extra "
      "CORS origins, comma-separated), OLLAMA_MODELS (model store).\nThe web UI is at /ui/.");
  cmd->alias("start");
  cmd->callback([] {
    run_command([] {
      http::ServerConfig config{
          http::ollama_host_from_env(), http::OriginPolicy::from_env(), {}, 4, true};
      http::Router router;
      api::add_basic_routes(router);
      http::add_static_routes(router, "/ui");
      http::Server server(std::move(config), std::move(router));
      server.listen();
      std::cerr << "vkllm: Listening on " << server.bound_address() << " (version "
                << vkllm::version() << ")" << std::endl;
      server.run(true);
      std::cerr << "vkllm: server stopped" << std::endl;
      return 0;
    });
  });
}

}  // namespace vkllm::cli
