// vkllm: a local LLM server speaking Ollama's and OpenAI's HTTP APIs, on Vulkan.
#include <CLI/CLI.hpp>
#include <string>

#include "engine/engine_version.h"
#include "server/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"vkllm: a local LLM server with Ollama- and OpenAI-compatible APIs on Vulkan",
               "vkllm"};
  app.set_version_flag("--version", "vkllm version " + std::string(vkllm::version()));
  app.require_subcommand(1);
  vkllm::cli::register_all(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
