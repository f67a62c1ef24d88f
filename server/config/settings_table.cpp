#include "server/config/settings_table.h"

namespace vkllm::config {

namespace {

constexpr SettingInfo kSettings[] = {
    // server
    {"OLLAMA_HOST", "server", "127.0.0.1:11434",
     "Address the server binds to and the client commands connect to ([scheme://]host[:port])."},
    {"OLLAMA_ORIGINS", "server", "",
     "Extra origins allowed by CORS, comma-separated (wildcards as Ollama allows)."},
    {"VKLLM_API_KEY", "server", "",
     "Require 'Authorization: Bearer KEY' or 'x-api-key: KEY': a key, or @FILE with one per "
     "line."},
    {"VKLLM_MAX_CONNECTIONS", "server", "2048",
     "Open connections at most (kept under the process's file limit)."},
    {"VKLLM_SHUTDOWN_GRACE", "server", "10",
     "Seconds running requests may finish after SIGTERM (0-3600)."},
    {"VKLLM_PRELOAD", "server", "",
     "Models to pull if missing, load and keep loaded, comma-separated (readiness waits)."},
    {"VKLLM_INSECURE_REGISTRIES", "server", "",
     "Registries (host[:port], comma-separated) reached over plain HTTP."},
    // scheduling
    {"OLLAMA_KEEP_ALIVE", "scheduling", "5m",
     "How long an idle model stays loaded (Go duration or seconds; negative: forever)."},
    {"OLLAMA_NUM_PARALLEL", "scheduling", "",
     "Sequences each model serves at once (default: what the KV cache allows, 4 to 64)."},
    {"OLLAMA_MAX_LOADED_MODELS", "scheduling", "3", "Models loaded at once."},
    {"OLLAMA_MAX_QUEUE", "scheduling", "512",
     "Requests waiting for a model before new ones get 503."},
    {"OLLAMA_CONTEXT_LENGTH", "scheduling", "",
     "Default num_ctx (default: 4096 on a CPU or below 23 GiB of device memory, 32768 below 47 "
     "GiB, else 262144; at most the model's trained context)."},
    {"OLLAMA_GPU_OVERHEAD", "scheduling", "0", "Bytes of device memory kept free."},
    // store
    {"OLLAMA_MODELS", "store", "~/.vkllm/models", "The model store."},
    {"OLLAMA_NOPRUNE", "store", "", "Keep blobs no model uses (any value but false/0)."},
    // engine
    {"VKLLM_DEVICE", "engine", "auto",
     "auto (a GPU, else the CPU backend), cpu, vulkan, or vulkan:<index or name>; a list "
     "(0,1) gives the devices a model too large for the first is split across, by layers in "
     "proportion to their free memory (auto: every GPU of the best kind)."},
    {"OLLAMA_SCHED_SPREAD", "engine", "",
     "Split every model by layers across all the devices (any value but false/0)."},
    {"VKLLM_SPLIT_MODE", "engine", "layer",
     "How a model split across devices is shared out: layer (each device a run of layers, one "
     "after another) or row (each device a share of every layer's heads and FFN rows, all at "
     "once, their partial sums added on the host twice per layer; llama, qwen2 and qwen3 "
     "decoders, others refused at load)."},
    {"VKLLM_THREADS", "engine", "", "CPU backend threads (default: the physical cores)."},
    {"VKLLM_CPU_ISA", "engine", "",
     "Caps the CPU kernels' instruction set: scalar, avx2, avx512 or amx."},
    {"VKLLM_KV_BUDGET", "engine", "", "Bytes of KV cache per model (K/M/G suffixes)."},
    {"OLLAMA_KV_CACHE_TYPE", "engine", "f16",
     "KV cache element type: f16, q8_0 or q4_0 (GGML's blocks of 32 with an f16 scale: about "
     "0.53x / 0.28x the memory; models whose head dimension is not a multiple of 32 keep f16)."},
    {"VKLLM_BLOCK_SIZE", "engine", "16", "Tokens per paged KV cache block (1-256)."},
    {"VKLLM_SPECULATIVE", "engine", "auto",
     "Speculative decoding: ngram (prompt lookup: the model checks several tokens copied from "
     "earlier in the context in one step, while fewer than 16 sequences run), off, or auto "
     "(ngram for models on the CPU, off on GPUs, where it costs up to 9% when it finds nothing). "
     "A model created with a draft model (DRAFT) drafts with it, on any device, unless this is "
     "off."},
    {"VKLLM_DRAFT_MAX", "engine", "7",
     "Drafted tokens a sequence verifies per step at most (1-32); a draft model's "
     "draft_num_predict (default 4) is capped by it. With the step's last token, 7 make the 8 "
     "rows a GPU's decode products take in one pass, computing each row as decode does."},
    {"VKLLM_PIPELINE_CACHE", "engine", "$OLLAMA_MODELS/pipeline-cache",
     "Directory of compiled Vulkan pipelines, so a restart compiles nothing."},
    {"VKLLM_WARM_UP", "engine", "1", "0: create pipelines at the first request, not at load."},
    {"VKLLM_MAX_BINDING_RANGE", "engine", "",
     "Caps the storage-buffer range the engine assumes (bytes, K/M/G), to test split tensors."},
    {"VKLLM_VULKAN_VALIDATION", "engine", "", "1: enable the Khronos validation layer."},
    {"VKLLM_NO_PUSH_DESCRIPTORS", "engine", "",
     "1: descriptor pools even where push "
     "descriptors exist."},
    {"VKLLM_QUIET", "engine", "", "1: no device summary or device choice on stderr."},
    // testing
    {"VKLLM_FAULT_INJECT", "testing", "",
     "device_lost@N: the N-th engine step fails as a lost device would (tests only)."},
};

}  // namespace

std::span<const SettingInfo> settings_table() {
  return kSettings;
}

}  // namespace vkllm::config
