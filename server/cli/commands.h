// The vkllm subcommands. Each add_* function registers one family of commands on the app;
// register_all() is the single list of them, so adding a command touches one line there.
#pragma once

#include <CLI/CLI.hpp>

namespace vkllm::cli {

void register_all(CLI::App& app);

void add_serve_command(CLI::App& app);
void add_gguf_commands(CLI::App& app);       // gguf-info
void add_tokenizer_commands(CLI::App& app);  // tokenize, detokenize
void add_dev_commands(CLI::App& app);        // dev make-model
void add_engine_commands(CLI::App& app);     // generate, debug logits, perplexity, bench
void add_model_commands(CLI::App& app);   // pull, push, create, list, show, rm, cp, import-ollama
void add_prompt_commands(CLI::App& app);  // debug render (joins the engine commands' debug group)
void add_run_commands(CLI::App& app);     // run, ps, stop

// Runs a command body, turning its exit code and exceptions into CLI11's exit protocol, so
// every command reports errors the same way ("vkllm: <message>" on stderr, exit code 1).
void run_command(const std::function<int()>& body);

}  // namespace vkllm::cli
