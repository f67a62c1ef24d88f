#include "server/config/settings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>

#include "engine/cpu/thread_pool.h"
#include "engine/kv/kv_cache_type.h"
#include "server/models/model_reference.h"

namespace vkllm::config {

namespace {

constexpr uint64_t kKiB = 1024;

[[noreturn]] void refuse(std::string_view name, const std::string& value, std::string_view what) {
  throw ConfigError(std::string(name) + "=" + value + ": " + std::string(what));
}

// Splits a comma-separated list; blanks around items go, empty items are dropped.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) items.push_back(std::move(item));
    start = comma + 1;
  }
  return items;
}

// A whole decimal number in [lo, hi], digits only (no sign, no blanks inside); nullopt if unset.
std::optional<uint64_t> whole_number(const Environment& env, std::string_view name, uint64_t lo,
                                     uint64_t hi, std::string_view what) {
  const std::string v = env.value(name);
  if (v.empty()) return std::nullopt;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || end != v.data() + v.size() || n < lo || n > hi) refuse(name, v, what);
  return n;
}

// "512M", "2G", "1.5g", "1048576" -> bytes; nullopt if unset.
std::optional<uint64_t> byte_size(const Environment& env, std::string_view name) {
  const std::string v = env.value(name);
  if (v.empty()) return std::nullopt;
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  const std::string_view suffix(end, v.data() + v.size() - end);
  double scale = 0;
  if (suffix.empty()) scale = 1;
  if (suffix == "k" || suffix == "K") scale = double(kKiB);
  if (suffix == "m" || suffix == "M") scale = double(kKiB * kKiB);
  if (suffix == "g" || suffix == "G") scale = double(kKiB * kKiB * kKiB);
  if (ec != std::errc{} || !(x > 0) || scale == 0) refuse(name, v, "not a size (bytes, K/M/G)");
  return static_cast<uint64_t>(x * scale);
}

// Ollama's boolean rule for the few on/off switches it has (strconv.ParseBool; OLLAMA_NOPRUNE
// counts anything unparsable as true).
bool ollama_false(const std::string& v) {
  static constexpr std::string_view kFalse[] = {"0", "f", "F", "FALSE", "false", "False"};
  return std::find(std::begin(kFalse), std::end(kFalse), v) != std::end(kFalse);
}

// A "1"-style switch: set and not "0".
bool flag(const Environment& env, std::string_view name) {
  const std::string v = env.value(name);
  return !v.empty() && v != "0";
}

// VKLLM_API_KEY: a key, or @FILE with one key per line ('#' comments, blank lines skipped).
std::vector<std::string> api_keys(const Environment& env) {
  const std::string value = env.value("VKLLM_API_KEY");
  if (value.empty()) return {};
  std::vector<std::string> keys;
  if (value[0] == '@') {
    std::ifstream in(value.substr(1));
    if (!in) throw ConfigError("VKLLM_API_KEY: cannot read " + value.substr(1));
    for (std::string line; std::getline(in, line);) {
      line = clean_env_value(line);
      if (!line.empty() && line[0] != '#') keys.push_back(line);
    }
    if (keys.empty()) throw ConfigError("VKLLM_API_KEY is set but holds no key");
  } else {
    keys.push_back(value);
  }
  return keys;
}

std::vector<registry::ModelName> preload(const Environment& env) {
  std::vector<registry::ModelName> names;
  for (const std::string& item : comma_list(env.value("VKLLM_PRELOAD"))) {
    std::optional<registry::ModelName> name;
    try {
      name = models::parse_model_reference(item);
    } catch (const std::exception& e) {
      throw ConfigError("VKLLM_PRELOAD: '" + item + "': " + e.what());
    }
    if (!name) throw ConfigError("VKLLM_PRELOAD: invalid model name '" + item + "'");
    const bool listed =
        std::any_of(names.begin(), names.end(), [&](const auto& n) { return n.same_model(*name); });
    if (!listed) names.push_back(std::move(*name));
  }
  return names;
}

// The numeric Ollama settings: Ollama ignores an unparsable value with a warning.
uint32_t ollama_count(const Environment& env, std::string_view name, uint32_t fallback,
                      std::vector<std::string>* warnings) {
  const std::string v = env.value(name);
  if (v.empty()) return fallback;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || end != v.data() + v.size()) {
    if (warnings) warnings->push_back("ignoring invalid " + std::string(name) + "=" + v);
    return fallback;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX));
}

}  // namespace

http::HostAddress read_client_host(const Environment& env) {
  return http::parse_ollama_host(env.value("OLLAMA_HOST"));
}

ServerSettings read_server_settings(const Environment& env) {
  ServerSettings s;
  s.host = read_client_host(env);
  s.extra_origins = comma_list(env.value("OLLAMA_ORIGINS"));
  s.api_keys = api_keys(env);
  if (const std::string v = env.value("VKLLM_MAX_CONNECTIONS"); !v.empty()) {
    // Kept from before the configuration module: a bad value falls back to the default.
    size_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc{} && end == v.data() + v.size() && n > 0) s.max_connections = n;
  }
  if (const auto n = whole_number(env, "VKLLM_SHUTDOWN_GRACE", 0, 3600,
                                  "must be a whole number of seconds (0-3600)")) {
    s.shutdown_grace = std::chrono::seconds(*n);
  }
  s.preload = preload(env);
  try {
    s.insecure_registries =
        registry::InsecureRegistries::parse(env.value("VKLLM_INSECURE_REGISTRIES"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("VKLLM_INSECURE_REGISTRIES: ") + e.what());
  }
  return s;
}

StoreSettings read_store_settings(const Environment& env) {
  StoreSettings s;
  const std::string home = env.value("HOME");
  s.home = home.empty() ? std::filesystem::path(".") : std::filesystem::path(home);
  const std::string models = env.value("OLLAMA_MODELS");
  s.root = models.empty() ? s.home / ".vkllm" / "models" : std::filesystem::path(models);
  s.ollama_root = s.home / ".ollama" / "models";
  const std::string noprune = env.value("OLLAMA_NOPRUNE");
  s.prune = noprune.empty() || ollama_false(noprune);
  return s;
}

sched::ManagerOptions read_model_options(const Environment& env,
                                         std::vector<std::string>* warnings) {
  sched::ManagerOptions o;
  if (const std::string ka = env.value("OLLAMA_KEEP_ALIVE"); !ka.empty()) {
    try {
      o.default_keep_alive = sched::parse_keep_alive_env(ka);
    } catch (const std::exception& e) {
      if (warnings) warnings->push_back(std::string("ignoring OLLAMA_KEEP_ALIVE: ") + e.what());
    }
  }
  o.max_loaded = ollama_count(env, "OLLAMA_MAX_LOADED_MODELS", 0, warnings);
  if (o.max_loaded == 0) o.max_loaded = 3;
  o.num_parallel = ollama_count(env, "OLLAMA_NUM_PARALLEL", 0, warnings);
  o.default_num_ctx = ollama_count(env, "OLLAMA_CONTEXT_LENGTH", 0, warnings);
  if (const std::string v = env.value("OLLAMA_GPU_OVERHEAD"); !v.empty()) {
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc{} && end == v.data() + v.size()) {
      o.gpu_overhead = n;
    } else if (warnings) {
      warnings->push_back("ignoring invalid OLLAMA_GPU_OVERHEAD=" + v);
    }
  }
  try {
    o.device = vk::DeviceRequest::parse(env.value("VKLLM_DEVICE"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("VKLLM_DEVICE: ") + e.what());
  }
  o.vulkan.selector = o.device.selector;
  const std::string spread = env.value("OLLAMA_SCHED_SPREAD");
  o.spread = !spread.empty() && !ollama_false(spread);
  if (const std::string v = env.value("VKLLM_SPLIT_MODE"); !v.empty()) {
    const auto mode = runtime::parse_split_mode(v);
    if (!mode) refuse("VKLLM_SPLIT_MODE", v, "expected layer or row");
    o.split_mode = *mode;
  }
  o.vulkan.validation = flag(env, "VKLLM_VULKAN_VALIDATION");
  o.vulkan.log_summary = !flag(env, "VKLLM_QUIET");
  o.vulkan.push_descriptors = !flag(env, "VKLLM_NO_PUSH_DESCRIPTORS");
  if (const auto range = byte_size(env, "VKLLM_MAX_BINDING_RANGE")) {
    o.vulkan.max_binding_range = *range;
  }
  if (const auto budget = byte_size(env, "VKLLM_KV_BUDGET")) o.runner.kv_budget_bytes = *budget;
  if (const std::string v = env.value("OLLAMA_KV_CACHE_TYPE"); !v.empty()) {
    try {
      o.runner.kv_cache_type = kv::parse_cache_type(v);
    } catch (const std::invalid_argument&) {
      refuse("OLLAMA_KV_CACHE_TYPE", v, "expected f16, q8_0 or q4_0");
    }
  }
  if (const auto n = whole_number(env, "VKLLM_BLOCK_SIZE", 1, 256, "must be between 1 and 256")) {
    o.runner.block_size = static_cast<uint32_t>(*n);
  }
  if (const std::string v = env.value("VKLLM_SPECULATIVE"); !v.empty()) {
    try {
      o.speculation.mode = sched::parse_speculation_mode(v);
    } catch (const std::invalid_argument&) {
      refuse("VKLLM_SPECULATIVE", v, "expected auto, ngram or off");
    }
  }
  if (const auto n = whole_number(env, "VKLLM_DRAFT_MAX", 1, 32, "expected 1-32")) {
    o.speculation.draft_max = static_cast<uint32_t>(*n);
  }
  if (const std::string v = env.value("VKLLM_WARM_UP"); !v.empty()) o.runner.warm_up = v != "0";
  if (const std::string dir = env.value("VKLLM_PIPELINE_CACHE"); !dir.empty()) {
    o.pipeline_cache.dir = dir;
  }
  if (const std::string v = env.value("VKLLM_FAULT_INJECT"); !v.empty()) {
    constexpr std::string_view kPrefix = "device_lost@";
    long step = 0;
    const char* first = v.data() + std::min(v.size(), kPrefix.size());
    const auto [end, ec] = std::from_chars(first, v.data() + v.size(), step);
    if (v.rfind(kPrefix, 0) != 0 || ec != std::errc{} || end != v.data() + v.size() || step < 1) {
      refuse("VKLLM_FAULT_INJECT", v, "expected device_lost@<step>");
    }
    o.fault_inject_step = step;
  }
  return o;
}

CpuSettings read_cpu_settings(const Environment& env) {
  CpuSettings c;
  // The value as set: " 3" is no thread count (the CPU backend's rule since it had one).
  if (const auto raw = env.raw("VKLLM_THREADS"); raw && !raw->empty()) {
    const std::string& v = *raw;
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (!std::isdigit(static_cast<unsigned char>(v[0])) || ec != std::errc{} ||
        end != v.data() + v.size() || n < 1 || n > 4096) {
      throw ConfigError("VKLLM_THREADS=" + v + ": expected a thread count from 1 to 4096");
    }
    c.threads = n;
  }
  if (const std::string v = env.value("VKLLM_CPU_ISA"); !v.empty()) {
    cpu::Isa isa;
    if (!cpu::parse_isa(v, isa)) {
      throw ConfigError("VKLLM_CPU_ISA=" + v + ": expected scalar, avx2, avx512 or amx");
    }
    c.isa = isa;
  }
  return c;
}

Settings read_settings(const Environment& env) {
  Settings s;
  s.server = read_server_settings(env);
  s.store = read_store_settings(env);
  s.models = read_model_options(env, &s.warnings);
  if (s.models.pipeline_cache.dir.empty()) {
    // Compiled pipelines are kept beside the store, so a restart skips shader compilation.
    s.models.pipeline_cache.dir = s.store.root / "pipeline-cache";
  }
  s.service.max_queue = ollama_count(env, "OLLAMA_MAX_QUEUE", 512, &s.warnings);
  if (s.service.max_queue == 0) s.service.max_queue = 512;
  s.cpu = read_cpu_settings(env);
  s.quiet = flag(env, "VKLLM_QUIET");
  return s;
}

void apply_process_settings(const CpuSettings& cpu) {
  cpu::ThreadPool::set_default_threads(cpu.threads);
  if (cpu.isa) cpu::set_isa_cap(*cpu.isa);
}

}  // namespace vkllm::config
