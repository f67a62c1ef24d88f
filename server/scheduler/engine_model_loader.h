// The server's model loader: a model from the blob store onto the backend device_choice.h picks
// (a GPU through Vulkan, else the CPU backend; with several devices, a decoder split by layers
// across them). Its footprint is weights + activations + the KV of a minimal context (with its
// draft model's, where it has one) against the devices' memory (system memory for the CPU
// backend); the header is parsed from the blob and the tensor data streamed from the blob's zstd
// frames into device upload, a LoRA adapter merged on the way; then a runner and a scheduler (or
// an embedding queue) are made for it, and the draft model's runner beside it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/model/lora_adapter.h"
#include "engine/runtime/embedder.h"
#include "engine/vulkan/context.h"
#include "registry/model_store.h"
#include "server/scheduler/device_choice.h"
#include "server/scheduler/manager_options.h"
#include "server/scheduler/model_loader.h"

namespace vkllm::sched {

class EngineModelLoader : public ModelLoader {
 public:
  EngineModelLoader(registry::ModelStore& store, ManagerOptions options);

  std::string describe() const override { return device_.describe(); }
  std::unique_ptr<PendingLoad> prepare(const registry::ModelShow& show) override;
  // The device's (VK_EXT_memory_budget where present; over every device of a split), or with
  // `host` the system's (MemAvailable, less what host-backend models may still touch).
  uint64_t free_bytes(bool host,
                      const std::map<std::string, std::shared_ptr<LoadedModel>>& loaded) override;
  void forget_device() override;

 private:
  class Pending;
  model::LoraAdapter read_lora_adapter(const registry::Digest& digest) const;
  // The draft model of a model (engine_model_loader_draft.cpp): read_draft reads its header into
  // m and says what it costs beside the target; load_draft loads its weights and makes its
  // Runner, sized as the target's (`target`), with KV for as many tokens. With `nextn_head`,
  // `draft` is the model's own blob and the draft its multi-token-prediction block
  // (engine/model/nextn_head.h). Throw http::StatusError.
  struct DraftCost {
    uint64_t fixed = 0;         // weights and activations
    uint64_t per_token_kv = 0;  // KV bytes of one token of context
  };
  DraftCost read_draft(LoadedModel& m, const registry::Digest& draft,
                       bool nextn_head = false) const;
  void load_draft(LoadedModel& m, const registry::Digest& draft,
                  const runtime::RunnerOptions& target, uint64_t kv_tokens) const;
  // The Vulkan contexts (created on first use): one, or with a split one per device.
  std::vector<std::shared_ptr<vk::Context>> vulkan_contexts();
  runtime::EmbedderOptions embedder_options() const;

  registry::ModelStore& store_;
  ManagerOptions options_;
  DeviceChoice device_;
  std::mutex contexts_mutex_;
  std::vector<std::shared_ptr<vk::Context>> contexts_;  // one, or one per split device
};

}  // namespace vkllm::sched
