#include "server/cli/commands.h"

#include <exception>
#include <iostream>

namespace vkllm::cli {

void register_all(CLI::App& app) {
  add_serve_command(app);
  add_gguf_commands(app);
  add_tokenizer_commands(app);
  add_dev_commands(app);
  add_engine_commands(app);
  add_model_commands(app);
  add_prompt_commands(app);
  add_run_commands(app);
}

void run_command(const std::function<int()>& body) {
  int code = 0;
  try {
    code = body();
  } catch (const CLI::Error&) {
    throw;
  } catch (const std::exception& e) {
    std::cerr << "vkllm: " << e.what() << "\n";
    code = 1;
  }
  if (code != 0) throw CLI::RuntimeError(code);
}

}  // namespace vkllm::cli
