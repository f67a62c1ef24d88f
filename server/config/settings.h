// vkllm's settings, parsed once from an Environment (environment.h) into typed option structs
// that the CLI hands to the server, the scheduler, the store and the engine explicitly: nothing
// below this module reads the environment. Each setting is described in settings_table.cpp.
//
// A value that cannot mean anything (VKLLM_SHUTDOWN_GRACE=soon) throws ConfigError naming the
// variable, so a misconfigured server fails at start-up; values Ollama ignores with a warning
// (OLLAMA_KEEP_ALIVE=nonsense) are ignored the same way and reported in `warnings`.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cpu/isa.h"
#include "registry/insecure_registries.h"
#include "registry/model_name.h"
#include "server/config/environment.h"
#include "server/http/host_address.h"
#include "server/requests/service_options.h"
#include "server/scheduler/manager_options.h"

namespace vkllm::config {

class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct ServerSettings {
  http::HostAddress host;                    // OLLAMA_HOST
  std::vector<std::string> extra_origins;    // OLLAMA_ORIGINS
  std::vector<std::string> api_keys;         // VKLLM_API_KEY (a file's keys read); empty: open
  size_t max_connections = 2048;             // VKLLM_MAX_CONNECTIONS
  std::chrono::seconds shutdown_grace{10};   // VKLLM_SHUTDOWN_GRACE
  std::vector<registry::ModelName> preload;  // VKLLM_PRELOAD
  registry::InsecureRegistries insecure_registries;  // VKLLM_INSECURE_REGISTRIES
};

struct StoreSettings {
  std::filesystem::path root;         // OLLAMA_MODELS, else ~/.vkllm/models
  std::filesystem::path ollama_root;  // ~/.ollama/models (import-ollama's default source)
  std::filesystem::path home;         // HOME ("." when unset): where ~ in a Modelfile points
  bool prune = true;                  // OLLAMA_NOPRUNE unset or false
};

// The process-wide CPU backend settings (apply_process_settings hands them to engine/cpu).
struct CpuSettings {
  unsigned threads = 0;         // VKLLM_THREADS (0: the physical cores)
  std::optional<cpu::Isa> isa;  // VKLLM_CPU_ISA cap (unset: the best the CPU has)
};

struct Settings {
  ServerSettings server;
  StoreSettings store;
  sched::ManagerOptions models;      // scheduling and the engine options each model loads with
  requests::ServiceOptions service;  // OLLAMA_MAX_QUEUE
  CpuSettings cpu;
  bool quiet = false;                 // VKLLM_QUIET
  std::vector<std::string> warnings;  // ignored values, one line each
};

// Everything; throws ConfigError. The parts below read only their own variables, for commands
// that need one part (a client command must not fail over a server-only setting).
Settings read_settings(const Environment& env);
ServerSettings read_server_settings(const Environment& env);
StoreSettings read_store_settings(const Environment& env);
// The scheduling and engine part; ignored values are appended to *warnings when given.
sched::ManagerOptions read_model_options(const Environment& env,
                                         std::vector<std::string>* warnings = nullptr);
CpuSettings read_cpu_settings(const Environment& env);
http::HostAddress read_client_host(const Environment& env);  // OLLAMA_HOST, for client commands

// Hands the process-wide settings (the CPU backend's thread count and instruction-set cap) to the
// engine; call once, before the first model loads.
void apply_process_settings(const CpuSettings& cpu);

}  // namespace vkllm::config
