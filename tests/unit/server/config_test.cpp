// The configuration module: every setting parsed from an Environment built in the test (no
// process variables touched), Ollama's value cleaning and boolean rules, refusals that name the
// variable, and docs/configuration.md listing exactly the settings table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "server/config/settings.h"
#include "server/config/settings_table.h"
#include "tests/support/temp_dir.h"

namespace vkllm::config {
namespace {

Environment env_of(std::map<std::string, std::string, std::less<>> vars) {
  return Environment(std::move(vars));
}

// The message of the ConfigError `read` throws, or "" when it throws none.
template <typename Read>
std::string refusal(Read read) {
  try {
    read();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigEnvironment, ValuesLoseBlanksThenQuotesAsOllamaReadsThem) {
  const Environment env = env_of(
      {{"A", "  \"/srv/my models\"  "}, {"B", "' 1 '"}, {"C", "a\"b"}, {"D", "  "}, {"E", "\"\""}});
  EXPECT_EQ(env.value("A"), "/srv/my models");
  EXPECT_EQ(env.value("B"), " 1 ");  // blanks inside the quotes stay
  EXPECT_EQ(env.value("C"), "a\"b");
  EXPECT_EQ(env.value("D"), "");
  EXPECT_EQ(env.value("E"), "");
  EXPECT_EQ(env.value("UNSET"), "");
  EXPECT_EQ(env.raw("D"), "  ");
  EXPECT_FALSE(env.raw("UNSET").has_value());
}

TEST(ConfigEnvironment, TheProcessSnapshotHoldsTheTableSettings) {
  ::setenv("OLLAMA_NUM_PARALLEL", "7", 1);
  ::setenv("VKLLM_NOT_A_SETTING", "x", 1);
  const Environment env = Environment::from_process();
  ::unsetenv("OLLAMA_NUM_PARALLEL");
  ::unsetenv("VKLLM_NOT_A_SETTING");
  EXPECT_EQ(env.value("OLLAMA_NUM_PARALLEL"), "7");
  EXPECT_FALSE(env.raw("VKLLM_NOT_A_SETTING").has_value());
}

TEST(ConfigStore, ModelsFollowOllamaModelsElseTheHomeFolder) {
  StoreSettings s = read_store_settings(env_of({{"OLLAMA_MODELS", " \"/srv/models\" "}}));
  EXPECT_EQ(s.root, std::filesystem::path("/srv/models"));
  s = read_store_settings(env_of({{"HOME", "/home/u"}}));
  EXPECT_EQ(s.root, std::filesystem::path("/home/u/.vkllm/models"));
  EXPECT_EQ(s.ollama_root, std::filesystem::path("/home/u/.ollama/models"));
  EXPECT_EQ(s.home, std::filesystem::path("/home/u"));
}

TEST(ConfigStore, NoPruneFollowsOllamaBooleans) {
  EXPECT_TRUE(read_store_settings(env_of({})).prune);
  for (const char* v : {"1", "true", "yes", "anything"}) {
    EXPECT_FALSE(read_store_settings(env_of({{"OLLAMA_NOPRUNE", v}})).prune) << v;
  }
  for (const char* v : {"0", "false", "F", " \"false\" "}) {
    EXPECT_TRUE(read_store_settings(env_of({{"OLLAMA_NOPRUNE", v}})).prune) << v;
  }
}

TEST(ConfigServer, HostOriginsAndConnectionLimits) {
  ServerSettings s =
      read_server_settings(env_of({{"OLLAMA_HOST", " \"0.0.0.0:8080\" "},
                                   {"OLLAMA_ORIGINS", "https://a.example, ,chrome-extension://*"},
                                   {"VKLLM_MAX_CONNECTIONS", "17"}}));
  EXPECT_EQ(s.host.host_port(), "0.0.0.0:8080");
  EXPECT_EQ(s.extra_origins,
            (std::vector<std::string>{"https://a.example", "chrome-extension://*"}));
  EXPECT_EQ(s.max_connections, 17u);
  for (const char* bad : {"0", "-3", "many", ""}) {
    EXPECT_EQ(read_server_settings(env_of({{"VKLLM_MAX_CONNECTIONS", bad}})).max_connections, 2048u)
        << bad;
  }
  s = read_server_settings(env_of({}));
  EXPECT_EQ(s.host.host_port(), "127.0.0.1:11434");
  EXPECT_EQ(s.shutdown_grace, std::chrono::seconds(10));
  EXPECT_TRUE(s.api_keys.empty());
  EXPECT_TRUE(s.preload.empty());
}

TEST(ConfigServer, ApiKeysComeFromTheValueOrAFile) {
  EXPECT_EQ(read_server_settings(env_of({{"VKLLM_API_KEY", " sekret "}})).api_keys,
            std::vector<std::string>{"sekret"});
  test::TempDir dir;
  const auto file = dir.path() / "keys";
  std::ofstream(file) << "# team keys\none\n\n  two  \n";
  EXPECT_EQ(read_server_settings(env_of({{"VKLLM_API_KEY", "@" + file.string()}})).api_keys,
            (std::vector<std::string>{"one", "two"}));
  std::ofstream(file, std::ios::trunc) << "# nothing\n";
  EXPECT_EQ(refusal([&] {
              read_server_settings(env_of({{"VKLLM_API_KEY", "@" + file.string()}}));
            }),
            "VKLLM_API_KEY is set but holds no key");
  EXPECT_NE(refusal([&] {
              read_server_settings(env_of({{"VKLLM_API_KEY", "@" + (dir.path() / "no").string()}}));
            }).find("cannot read"),
            std::string::npos);
}

TEST(ConfigServer, MalformedServerSettingsAreRefusedByName) {
  EXPECT_EQ(read_server_settings(env_of({{"VKLLM_SHUTDOWN_GRACE", "0"}})).shutdown_grace,
            std::chrono::seconds(0));
  for (const char* bad : {"soon", "-1", "3601", "1.5", "10s"}) {
    EXPECT_EQ(refusal([&] {
                read_server_settings(env_of({{"VKLLM_SHUTDOWN_GRACE", bad}}));
              }),
              std::string("VKLLM_SHUTDOWN_GRACE=") + bad +
                  ": must be a whole number of seconds (0-3600)");
  }
  const auto preload =
      read_server_settings(env_of({{"VKLLM_PRELOAD", "llama3.2, qwen3:4b,llama3.2"}}));
  ASSERT_EQ(preload.preload.size(), 2u);  // the same model twice is loaded once
  EXPECT_EQ(refusal([] {
              read_server_settings(env_of({{"VKLLM_PRELOAD", "not a name!"}}));
            }).rfind("VKLLM_PRELOAD: ", 0),
            0u);
  EXPECT_EQ(refusal([] {
              read_server_settings(env_of({{"VKLLM_INSECURE_REGISTRIES", "http://reg:5000"}}));
            }).rfind("VKLLM_INSECURE_REGISTRIES: ", 0),
            0u);
}

TEST(ConfigModels, OllamaSchedulingSettingsAndTheirFallbacks) {
  std::vector<std::string> warnings;
  sched::ManagerOptions o = read_model_options(env_of({{"OLLAMA_KEEP_ALIVE", "1h"},
                                                       {"OLLAMA_NUM_PARALLEL", "8"},
                                                       {"OLLAMA_MAX_LOADED_MODELS", "0"},
                                                       {"OLLAMA_CONTEXT_LENGTH", "8192"},
                                                       {"OLLAMA_GPU_OVERHEAD", "1073741824"}}),
                                               &warnings);
  EXPECT_EQ(o.default_keep_alive, std::chrono::hours(1));
  EXPECT_EQ(o.num_parallel, 8u);
  EXPECT_EQ(o.max_loaded, 3u);  // 0 means the default
  EXPECT_EQ(o.default_num_ctx, 8192u);
  EXPECT_EQ(o.gpu_overhead, uint64_t(1) << 30);
  EXPECT_TRUE(warnings.empty());
  o = read_model_options(env_of({{"OLLAMA_KEEP_ALIVE", "300"}}));
  EXPECT_EQ(o.default_keep_alive, std::chrono::minutes(5));  // bare numbers are seconds
  // What Ollama ignores with a warning is ignored the same way.
  o = read_model_options(env_of({{"OLLAMA_KEEP_ALIVE", "soon"}, {"OLLAMA_NUM_PARALLEL", "x4"}}),
                         &warnings);
  EXPECT_EQ(o.default_keep_alive, std::chrono::minutes(5));
  EXPECT_EQ(o.num_parallel, 0u);
  EXPECT_EQ(warnings.size(), 2u);
}

TEST(ConfigModels, EngineSettingsReachTheirOptions) {
  const sched::ManagerOptions o =
      read_model_options(env_of({{"VKLLM_DEVICE", "vulkan:1"},
                                 {"VKLLM_KV_BUDGET", "512M"},
                                 {"VKLLM_BLOCK_SIZE", "32"},
                                 {"VKLLM_WARM_UP", "0"},
                                 {"VKLLM_MAX_BINDING_RANGE", "40K"},
                                 {"VKLLM_QUIET", "1"},
                                 {"VKLLM_PIPELINE_CACHE", "/tmp/pc"},
                                 {"VKLLM_FAULT_INJECT", "device_lost@3"},
                                 {"OLLAMA_KV_CACHE_TYPE", "q8_0"},
                                 {"VKLLM_SPECULATIVE", "off"},
                                 {"VKLLM_DRAFT_MAX", "4"}}));
  EXPECT_EQ(o.device.str(), "vulkan:1");
  EXPECT_EQ(o.vulkan.selector, "1");
  EXPECT_EQ(o.runner.kv_budget_bytes, uint64_t(512) << 20);
  EXPECT_EQ(o.runner.block_size, 32u);
  EXPECT_FALSE(o.runner.warm_up);
  EXPECT_EQ(o.vulkan.max_binding_range, 40u << 10);
  EXPECT_FALSE(o.vulkan.log_summary);
  EXPECT_EQ(o.pipeline_cache.dir, std::filesystem::path("/tmp/pc"));
  EXPECT_EQ(o.fault_inject_step, 3);
  EXPECT_EQ(o.runner.kv_cache_type, kv::CacheType::Q8_0);
  EXPECT_EQ(o.speculation.mode, sched::SpeculationMode::off);
  EXPECT_EQ(o.speculation.draft_max, 4u);
  EXPECT_EQ(
      read_model_options(env_of({{"VKLLM_MAX_BINDING_RANGE", "2G"}})).vulkan.max_binding_range,
      uint64_t(2) << 30);
  const sched::ManagerOptions d = read_model_options(env_of({}));
  EXPECT_EQ(d.vulkan.max_binding_range, 0u);
  EXPECT_EQ(d.runner.kv_budget_bytes, 0u);
  EXPECT_EQ(d.runner.kv_cache_type, kv::CacheType::F16);
  EXPECT_EQ(d.speculation.mode, sched::SpeculationMode::automatic);
  EXPECT_EQ(d.speculation.draft_max, 7u);
  EXPECT_TRUE(d.pipeline_cache.dir.empty());
  EXPECT_FALSE(d.spread);
  // A device list splits models; OLLAMA_SCHED_SPREAD follows Ollama's boolean rule.
  const sched::ManagerOptions split =
      read_model_options(env_of({{"VKLLM_DEVICE", "0,1"}, {"OLLAMA_SCHED_SPREAD", "1"}}));
  EXPECT_EQ(split.device.split, (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(split.spread);
  EXPECT_FALSE(read_model_options(env_of({{"OLLAMA_SCHED_SPREAD", "false"}})).spread);
  EXPECT_EQ(d.split_mode, runtime::SplitMode::Layer);
  EXPECT_EQ(read_model_options(env_of({{"VKLLM_SPLIT_MODE", "row"}})).split_mode,
            runtime::SplitMode::Row);
  // read_settings keeps compiled pipelines beside the store unless told otherwise.
  EXPECT_EQ(read_settings(env_of({{"OLLAMA_MODELS", "/m"}})).models.pipeline_cache.dir,
            std::filesystem::path("/m/pipeline-cache"));
}

TEST(ConfigModels, MalformedEngineSettingsAreRefusedByName) {
  const std::pair<const char*, const char*> bad[] = {
      {"VKLLM_KV_BUDGET", "lots"},
      {"VKLLM_KV_BUDGET", "-1G"},
      {"VKLLM_BLOCK_SIZE", "0"},
      {"VKLLM_BLOCK_SIZE", "257"},
      {"VKLLM_MAX_BINDING_RANGE", "lots"},
      {"VKLLM_DEVICE", "vulkan:"},
      {"VKLLM_FAULT_INJECT", "crash@2"},
      {"OLLAMA_KV_CACHE_TYPE", "q3_k"},
      {"VKLLM_SPLIT_MODE", "tensor"},
      {"VKLLM_SPECULATIVE", "eagle"},
      {"VKLLM_DRAFT_MAX", "0"},
      {"VKLLM_DRAFT_MAX", "33"},
  };
  for (const auto& [name, value] : bad) {
    const std::string message = refusal([&] { read_model_options(env_of({{name, value}})); });
    EXPECT_EQ(message.rfind(name, 0), 0u) << name << "=" << value << ": " << message;
  }
}

TEST(ConfigCpu, ThreadsAndInstructionSet) {
  EXPECT_EQ(read_cpu_settings(env_of({{"VKLLM_THREADS", "3"}})).threads, 3u);
  EXPECT_EQ(read_cpu_settings(env_of({{"VKLLM_THREADS", ""}})).threads, 0u);  // unset
  for (const char* junk :
       {"junk", "0", "-2", "3x", "2.5", " 3", "+3", "4097", "99999999999999999999"}) {
    EXPECT_EQ(refusal([&] {
                read_cpu_settings(env_of({{"VKLLM_THREADS", junk}}));
              }),
              std::string("VKLLM_THREADS=") + junk + ": expected a thread count from 1 to 4096");
  }
  EXPECT_EQ(read_cpu_settings(env_of({{"VKLLM_CPU_ISA", "scalar"}})).isa, cpu::Isa::Portable);
  EXPECT_EQ(read_cpu_settings(env_of({{"VKLLM_CPU_ISA", "avx512"}})).isa, cpu::Isa::Avx512);
  EXPECT_FALSE(read_cpu_settings(env_of({})).isa.has_value());
  EXPECT_EQ(refusal([] {
              read_cpu_settings(env_of({{"VKLLM_CPU_ISA", "sse9"}}));
            }),
            "VKLLM_CPU_ISA=sse9: expected scalar, avx2, avx512 or amx");
}

// docs/configuration.md has one "### NAME" section per setting of the table, in the table's
// order, each stating the table's default; a setting added in one place and not the other fails.
TEST(ConfigDocs, TheConfigurationPageListsExactlyTheSettingsTable) {
  const std::filesystem::path root = VKLLM_SOURCE_DIR;
  std::ifstream in(root / "docs" / "configuration.md");
  ASSERT_TRUE(in) << (root / "docs" / "configuration.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  std::vector<std::string> documented;
  const std::regex heading(R"(\n### `([A-Z_0-9]+)`)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), heading);
       it != std::sregex_iterator(); ++it) {
    documented.push_back((*it)[1]);
  }
  std::vector<std::string> table;
  for (const SettingInfo& s : settings_table()) {
    table.emplace_back(s.name);
    const std::string section_start = "### `" + std::string(s.name) + "`";
    const size_t at = doc.find(section_start);
    if (at == std::string::npos || s.default_value.empty()) continue;
    const size_t end = doc.find("\n### ", at + 1);
    const std::string section = doc.substr(at, end == std::string::npos ? end : end - at);
    EXPECT_NE(section.find("Default: `" + std::string(s.default_value) + "`"), std::string::npos)
        << s.name << " does not state its default " << s.default_value;
  }
  EXPECT_EQ(documented, table);
}

}  // namespace
}  // namespace vkllm::config
