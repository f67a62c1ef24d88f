// A GGUF file loaded for an in-process engine command (generate, debug logits, perplexity,
// bench) on the backend the server would pick (device_choice.h): --device, else VKLLM_DEVICE,
// else a GPU when there is one and the CPU backend otherwise, or split across several Vulkan
// devices (a device list, or OLLAMA_SCHED_SPREAD; by layers, or by rows with
// VKLLM_SPLIT_MODE=row); optionally with a LoRA adapter merged
// into its weights (engine/runtime/lora_merge.h; not with a split).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/split_model.h"
#include "engine/vulkan/context.h"
#include "server/scheduler/device_choice.h"
#include "server/scheduler/manager_options.h"

namespace vkllm::cli {

// Adds --device (auto, cpu, vulkan, vulkan:N, a list N,M) to an engine command; empty:
// VKLLM_DEVICE.
void add_device_option(CLI::App* cmd, std::string& device);

// Adds --tune key=value (repeatable; engine/runtime/tuning_keys.h) to an engine command;
// `--tune help` prints the keys and exits.
void add_tune_option(CLI::App* cmd, std::vector<std::string>& tunes);

// The engine settings of this process's environment (server/config), with the process-wide CPU
// settings applied and `tunes` (key=value) set: what every engine command starts from. Throws
// std::invalid_argument for a bad tuning key or value.
sched::ManagerOptions engine_settings(const std::vector<std::string>& tunes = {});

struct EngineModel {
  // Throws for an unreadable file, an unsupported model, or a device that cannot be opened.
  // Runs with engine.runner's options; `device` overrides engine.device when not empty.
  // `lora`: an adapter GGUF to merge (empty: none).
  EngineModel(const std::string& path, const std::string& device,
              const sched::ManagerOptions& engine, const std::string& lora = {});

  bool on_cpu() const { return choice.backend == sched::Backend::Cpu; }
  // The spec the graph runs (split by rows: a device's share of the heads and FFN rows).
  const model::ModelSpec& spec() const {
    return on_cpu() ? host->spec() : split ? split->spec() : model->spec();
  }
  uint64_t weight_bytes() const {
    return on_cpu() ? host->weight_bytes() : split ? split->weight_bytes() : model->weight_bytes();
  }
  std::string device_name() const;

  gguf::GgufFile file;
  std::unique_ptr<gguf::GgufFile> merged_header;  // with --lora: the header the model loaded
  sched::DeviceChoice choice;
  std::unique_ptr<vk::Context> ctx;       // Vulkan (split: the first device)
  std::unique_ptr<runtime::Model> model;  // Vulkan, one device
  // Split across devices: the devices after the first, and the model's stages.
  std::vector<std::unique_ptr<vk::Context>> more_ctxs;
  std::unique_ptr<runtime::SplitModel> split;
  std::unique_ptr<runtime::HostModel> host;  // CPU backend: points into the file's mapping
  std::unique_ptr<runtime::Runner> runner;
  double load_seconds = 0;  // the weights (and, on Vulkan, their upload)
};

}  // namespace vkllm::cli
