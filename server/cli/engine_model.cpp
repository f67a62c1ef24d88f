#include "server/cli/engine_model.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "engine/model/lora_adapter.h"
#include "engine/runtime/lora_merge.h"
#include "engine/runtime/tuning_keys.h"
#include "server/config/settings.h"

namespace vkllm::cli {

void add_device_option(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device,
                  "auto (a GPU, else the CPU backend), cpu, vulkan or vulkan:<index>, or a "
                  "list of indices (0,1: the model split across them, by layers or as "
                  "VKLLM_SPLIT_MODE says) "
                  "(default: VKLLM_DEVICE, else auto)");
}

void add_tune_option(CLI::App* cmd, std::vector<std::string>& tunes) {
  cmd->add_option("--tune", tunes,
                  "key=value: a measurement parameter of the engine (repeatable; "
                  "'--tune help' lists them)")
      ->each([](const std::string& v) {
        if (v != "help") return;
        std::cout << "--tune keys (engine/runtime/tuning_keys.h):\n" << runtime::tuning_help();
        throw CLI::Success();
      });
}

sched::ManagerOptions engine_settings(const std::vector<std::string>& tunes) {
  const config::Environment env = config::Environment::from_process();
  config::apply_process_settings(config::read_cpu_settings(env));
  sched::ManagerOptions engine = config::read_model_options(env);
  for (const std::string& t : tunes)
    runtime::apply_tuning(t, {engine.runner, engine.vulkan.tuning});
  return engine;
}

EngineModel::EngineModel(const std::string& path, const std::string& device,
                         const sched::ManagerOptions& engine, const std::string& lora)
    : file(gguf::GgufFile::open(path)),
      choice(
          sched::choose_device(device.empty() ? engine.device : vk::DeviceRequest::parse(device))) {
  const runtime::RunnerOptions& options = engine.runner;
  // A measurement splits what it is told to: a device list, or every GPU with
  // OLLAMA_SCHED_SPREAD (the server also splits a model too large for the first device).
  choice.spread =
      engine.spread ||
      !(device.empty() ? engine.device : vk::DeviceRequest::parse(device)).split.empty();
  choice.by_rows = engine.split_mode == runtime::SplitMode::Row;
  if (engine.vulkan.log_summary) std::cerr << "vkllm: running on " << choice.describe() << "\n";
  if (!on_cpu()) {
    ctx =
        std::make_unique<vk::Context>(choice.vulkan_options(engine.vulkan), engine.pipeline_cache);
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!on_cpu() && choice.split() && choice.spread) {
    if (!lora.empty()) throw std::invalid_argument("--lora does not combine with a device list");
    std::vector<vk::Context*> devices{ctx.get()};
    for (size_t i = 1; i < choice.split_selectors.size(); ++i) {
      more_ctxs.push_back(std::make_unique<vk::Context>(choice.vulkan_options(engine.vulkan, i),
                                                        engine.pipeline_cache));
      devices.push_back(more_ctxs.back().get());
    }
    std::vector<uint64_t> free;
    for (vk::Context* c : devices) {
      const auto b = c->device().memory_budget();
      free.push_back(b.budget > b.usage ? b.budget - b.usage : 0);
    }
    split = runtime::load_split_model(
        devices, file,
        [this](size_t) -> std::unique_ptr<runtime::TensorDataSource> {
          return std::make_unique<runtime::GgufFileSource>(file);
        },
        engine.split_mode, free, engine.model);
    load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    runner = std::make_unique<runtime::Runner>(*split, options);
    return;
  }
  if (!lora.empty()) {
    const auto adapter = model::LoraAdapter::open(lora);
    merged_header = std::make_unique<gguf::GgufFile>(runtime::lora_merged_header(file, adapter));
    runtime::GgufFileSource base(file);
    runtime::LoraMergedSource merged(file, *merged_header, base, adapter);
    if (on_cpu()) {
      host = std::make_unique<runtime::HostModel>(*merged_header, merged);
    } else {
      model = std::make_unique<runtime::Model>(*ctx, *merged_header, merged, engine.model);
    }
  } else if (on_cpu()) {
    host = std::make_unique<runtime::HostModel>(file);
  } else {
    model = std::make_unique<runtime::Model>(*ctx, file, engine.model);
  }
  load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  runner = on_cpu() ? std::make_unique<runtime::Runner>(*host, options)
                    : std::make_unique<runtime::Runner>(*model, options);
}

std::string EngineModel::device_name() const {
  if (split) {
    std::string names = ctx->caps().name;
    for (const auto& c : more_ctxs) names += " + " + c->caps().name;
    return names;
  }
  if (!on_cpu()) return ctx->caps().name;
  return "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " hardware threads)";
}

}  // namespace vkllm::cli
