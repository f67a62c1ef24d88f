// `vkllm bench --cold`: what a user waits for before the first token of a freshly started
// process: loading the weights, creating the pipelines (Runner warm-up, through the on-disk
// pipeline cache when VKLLM_PIPELINE_CACHE names one), and the first request's time to first
// token, against a second request of the same size. Run it twice on one cache directory (and,
// on NVIDIA, with __GL_SHADER_DISK_CACHE=0) to compare a cold with a warm start; with
// VKLLM_WARM_UP=0 the pipelines are instead compiled inside the first request.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/context.h"
#include "server/cli/engine_bench.h"
#include "server/cli/engine_model.h"
#include "server/cli/stopwatch.h"
#include "server/scheduler/device_choice.h"

namespace vkllm::cli {
namespace {

using Clock = std::chrono::steady_clock;
}  // namespace

int run_cold_start_bench(const BenchArgs& args) {
  const sched::ManagerOptions engine = engine_settings(args.tunes);
  const auto choice = sched::choose_device(
      args.device.empty() ? engine.device : vk::DeviceRequest::parse(args.device));
  if (choice.backend != sched::Backend::Vulkan) {
    throw std::runtime_error(
        "bench --cold measures Vulkan start-up (pipeline creation), which the CPU backend does "
        "not have: add --device vulkan");
  }
  const auto t_start = Clock::now();
  auto file = gguf::GgufFile::open(args.model);
  vk::Context ctx(choice.vulkan_options(engine.vulkan), engine.pipeline_cache);
  const double device_s = seconds_since(t_start);
  auto t = Clock::now();
  runtime::Model model(ctx, file, engine.model);
  const double weights_s = seconds_since(t);
  runtime::RunnerOptions opts = engine.runner;
  opts.max_context = std::max(opts.max_context, args.prompt_tokens + 16);
  t = Clock::now();
  runtime::Runner runner(model, opts);
  const double runner_s = seconds_since(t);
  const auto after_load = ctx.pipelines().stats();

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> tok(100, static_cast<int32_t>(model.spec().n_vocab) - 1);
  // Time to first token of one request: the whole prompt, then the token it yields.
  auto request = [&] {
    std::vector<int32_t> prompt(args.prompt_tokens);
    for (auto& x : prompt) x = tok(rng);
    runtime::Generator gen(runner);
    const auto t0 = Clock::now();
    gen.feed(prompt);
    return seconds_since(t0);
  };
  const double first_s = request();
  const auto after_first = ctx.pipelines().stats();
  const double second_s = request();

  nlohmann::json out{
      {"model", args.model},
      {"device", ctx.caps().name},
      {"prompt_tokens", args.prompt_tokens},
      {"device_seconds", device_s},
      {"weights_seconds", weights_s},
      {"warm_up_seconds", runner_s},
      {"load_seconds", device_s + weights_s + runner_s},
      {"pipelines_at_load", after_load.created},
      {"pipelines_in_first_request", after_first.created - after_load.created},
      {"pipeline_cache_hits", after_first.cache_hits},
      {"pipeline_create_ms", after_first.create_ms},
      {"slowest_pipeline", after_first.slowest},
      {"slowest_pipeline_ms", after_first.slowest_ms},
      {"pipeline_disk_cache", after_load.disk},
      {"first_request_ttft_seconds", first_s},
      {"second_request_ttft_seconds", second_s},
      {"first_over_second", first_s / second_s},
  };
  if (args.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf(
        "%s on %s\nload %.2f s (device %.2f, weights %.2f, pipelines %.2f: %llu created, %llu "
        "from cache, disk cache %s)\nfirst request %u tokens: %.3f s to first token (%llu "
        "pipelines created in it); second: %.3f s (first/second %.2f)\n",
        args.model.c_str(), ctx.caps().name.c_str(), device_s + weights_s + runner_s, device_s,
        weights_s, runner_s, static_cast<unsigned long long>(after_load.created),
        static_cast<unsigned long long>(after_load.cache_hits), after_load.disk.c_str(),
        args.prompt_tokens, first_s,
        static_cast<unsigned long long>(after_first.created - after_load.created), second_s,
        first_s / second_s);
  }
  return 0;
}

}  // namespace vkllm::cli
