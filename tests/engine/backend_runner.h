// A model loaded on one of the two backends, with a Runner over it: for engine tests that run
// the same case on the CPU backend and on Vulkan (lavapipe here).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "tests/engine/vk_test_context.h"

namespace vkllm::test {

enum class Backend { Vulkan, Cpu };

inline std::string backend_label(Backend b) {
  return b == Backend::Cpu ? "Cpu_" : "Vulkan_";
}

// `file` must outlive it; `model` applies on Vulkan only.
struct BackendRunner {
  std::optional<runtime::HostModel> host;
  std::optional<runtime::Model> device;
  std::unique_ptr<runtime::Runner> runner;

  BackendRunner(Backend b, const gguf::GgufFile& file, const runtime::RunnerOptions& options,
                const runtime::ModelOptions& model = {}) {
    if (b == Backend::Cpu) {
      host.emplace(file);
      runner = std::make_unique<runtime::Runner>(*host, options);
    } else {
      device.emplace(vk_context(), file, model);
      runner = std::make_unique<runtime::Runner>(*device, options);
    }
  }
};

}  // namespace vkllm::test
