// `vkllm debug render`: the exact prompt the server builds for an /api/chat or /api/generate
// body, from a template file or an installed model's layers (template, system, messages, GGUF
// chat_template for named-template detection). Message truncation needs the model's tokenizer
// and is not applied here.
#include <fstream>
#include <iostream>
#include <sstream>

#include "registry/model_store.h"
#include "server/api/chat_request.h"
#include "server/cli/commands.h"
#include "server/config/settings.h"
#include "server/models/gguf_summary.h"
#include "server/prompt/prompt.h"

namespace vkllm::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

prompt::ModelPrompt installed_model(const std::string& name) {
  const auto parsed = registry::ModelName::try_parse(name);
  if (!parsed) throw std::runtime_error("invalid model name: " + name);
  registry::ModelStore store(config::read_store_settings(config::Environment::from_process()).root);
  if (!store.find(*parsed)) throw std::runtime_error("model '" + name + "' not found");
  const auto shown = store.show(*parsed);
  prompt::ModelPrompt m;
  m.template_text = shown.template_text;
  m.system = shown.system;
  for (const auto& msg : shown.messages)
    m.messages.push_back({msg.role, msg.content, "", {}, {}, "", ""});
  m.name = parsed->display();
  m.renderer = shown.renderer;
  m.parser = shown.parser;
  m.has_projector = !shown.projectors.empty();
  if (shown.model_blob) {
    try {
      const auto g = models::read_gguf_summary(store.blobs(), *shown.model_blob);
      m.gguf_chat_template = g->chat_template;
      m.architecture = g->architecture;
      if (!g->inline_projector.empty()) m.has_projector = true;
    } catch (const std::exception&) {
      // Weights that are not readable GGUF: no chat_template to detect from.
    }
  }
  return m;
}

int render(const std::string& template_file, const std::string& model, const std::string& request) {
  ojson body = ojson::parse(read_file(request), nullptr, false);
  if (!body.is_object()) throw std::runtime_error(request + " is not a JSON object");
  prompt::ModelPrompt mp;
  if (!model.empty()) mp = installed_model(model);
  if (!template_file.empty()) mp.template_text = read_file(template_file);
  if (body.contains("messages")) {
    prompt::PromptBuilder b(std::move(mp));
    std::cout << b.render_chat(api::chat_input(body), UINT32_MAX, {}).text << std::flush;
    return 0;
  }
  if (body.value("raw", false)) {
    std::cout << body.value("prompt", "") << std::flush;
    return 0;
  }
  prompt::PromptBuilder b(std::move(mp));
  std::cout << b.render_generate(api::generate_input(body)).text << std::flush;
  return 0;
}

}  // namespace

void add_prompt_commands(CLI::App& app) {
  struct Args {
    std::string template_file, model, request;
  };
  auto args = std::make_shared<Args>();
  auto* debug = app.get_subcommand("debug");
  auto* cmd = debug->add_subcommand(
      "render", "Print the exact prompt built for an /api/chat or /api/generate request body");
  cmd->add_option("--template", args->template_file, "Go template file (overrides --model's)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--model", args->model, "Installed model (store at OLLAMA_MODELS)");
  cmd->add_option("--request", args->request, "Request body (JSON file)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->callback([args] {
    run_command([&] { return render(args->template_file, args->model, args->request); });
  });
}

}  // namespace vkllm::cli
