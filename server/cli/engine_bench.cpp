#include "server/cli/engine_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/runner.h"
#include "engine/vulkan/context.h"
#include "server/cli/engine_model.h"
#include "server/cli/stopwatch.h"

namespace vkllm::cli {

namespace {

using Clock = std::chrono::steady_clock;

// How long the GPU is kept busy before a measurement (see the prefill below), and the most
// decode steps that warm-up may take.
constexpr double kWarmUpSeconds = 0.5;
constexpr uint32_t kMaxWarmUpSteps = 256;

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// The calling thread's alone: what recording and submitting a step costs, without a software
// driver's worker threads (compared with the server's engine thread by bench/bench_serve.mjs).
double thread_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Device memory bandwidth in GB/s (bytes read + written) of a compute-shader copy, timed with GPU
// timestamps when the queue has them, else wall time; the best of several repetitions.
double copy_bandwidth_gbps(vk::Context& ctx) {
  const auto& caps = ctx.caps();
  const VkDeviceSize bytes =
      std::min<VkDeviceSize>({VkDeviceSize(1) << 30, caps.device_local_bytes / 8,
                              caps.max_storage_buffer_range / 16 * 16});
  vk::Buffer a(ctx.device(), bytes, vk::MemoryKind::DeviceLocal, "bench copy src");
  vk::Buffer b(ctx.device(), bytes, vk::MemoryKind::DeviceLocal, "bench copy dst");
  const auto& copy = ctx.pipelines().get(
      {.shader = "copy_words", .num_buffers = 2, .push_constant_bytes = 4, .spec = {256}});
  const uint32_t words = static_cast<uint32_t>(bytes / 16);
  const uint32_t groups = std::min<uint32_t>(vk::div_up(words, 256), 65535);
  vk::CommandRecorder rec(ctx.device());
  double best = 0;
  constexpr int kCopies = 8;
  for (int rep = 0; rep < 4; ++rep) {
    rec.begin();
    rec.timestamp("start");
    for (int i = 0; i < kCopies; ++i) {
      rec.dispatch(copy, {a.slice(), b.slice()}, words, {groups});
      rec.barrier();
    }
    rec.timestamp("end");
    auto t0 = Clock::now();
    rec.submit_and_wait();
    double s = seconds_since(t0);
    auto timings = rec.timings();
    if (timings.size() == 2 && timings[1].ms > timings[0].ms)
      s = (timings[1].ms - timings[0].ms) * 1e-3;
    best = std::max(best, 2.0 * kCopies * double(bytes) / s / 1e9);
  }
  return best;
}

// Host memory bandwidth (one thread's memcpy, best of several): the CPU backend's roofline.
double host_copy_bandwidth_gbps() {
  const size_t bytes = size_t(256) << 20;
  std::vector<std::byte> a(bytes, std::byte{1}), b(bytes);
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::max(best, 2.0 * double(bytes) / seconds_since(t0) / 1e9);
  }
  return best;
}

// GPU time of a step's phases (timestamps; per phase of one layer with --tune profile=1 and
// profile_layer), into `d`.
void add_gpu_phases(nlohmann::json& d, const std::vector<std::pair<std::string, double>>& t) {
  if (t.size() < 2) return;
  nlohmann::json phases = nlohmann::json::array();
  for (size_t i = 1; i < t.size(); ++i)
    phases.push_back({t[i].first, t[i].second - t[i - 1].second});
  d["gpu_ms_per_step"] = t.back().second - t.front().second;
  d["gpu_phases_ms"] = phases;
}

void print_gpu_phases(const nlohmann::json& d) {
  if (!d.contains("gpu_phases_ms")) return;
  std::printf("  gpu phases (ms):");
  for (const auto& ph : d["gpu_phases_ms"])
    std::printf(" %s %.4f", ph[0].get<std::string>().c_str(), ph[1].get<double>());
  std::printf("\n");
}

}  // namespace

int run_bench(const BenchArgs& args) {
  sched::ManagerOptions engine = engine_settings(args.tunes);
  runtime::RunnerOptions& opts = engine.runner;
  uint32_t max_batch = 1;
  for (uint32_t b : args.batches) max_batch = std::max(max_batch, b);
  opts.max_seqs = std::max(opts.max_seqs, max_batch);
  // Verification steps of up to 16 sequences (a hybrid keeps the state after each draft token).
  if (args.verify > 0) opts.draft_states = std::max(opts.draft_states, 16 * args.verify);
  opts.max_context = std::max(
      opts.max_context, args.depth + args.prompt_tokens + args.gen_tokens + kMaxWarmUpSteps + 16);
  EngineModel m(args.model, args.device, engine);
  runtime::Runner& runner = *m.runner;
  const double load_s = m.load_seconds;
  const auto& spec = m.spec();

  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> tok(100, static_cast<int32_t>(spec.n_vocab) - 1);
  auto random_tokens = [&](size_t n) {
    std::vector<int32_t> v(n);
    for (auto& t : v) t = tok(rng);
    return v;
  };

  nlohmann::json out;
  out["model"] = args.model;
  out["device"] = m.device_name();
  out["backend"] = m.on_cpu() ? "cpu" : "vulkan";
  out["arch"] = spec.arch_name;
  out["n_layer"] = spec.n_layer;
  out["n_embd"] = spec.n_embd;
  out["weight_bytes"] = m.weight_bytes();
  out["kv_cache_type"] = std::string(kv::cache_type_name(opts.kv_cache_type));
  out["kv_blocks"] = runner.pool().num_blocks();
  out["load_seconds"] = load_s;
  out["depth"] = args.depth;
  if (m.split && m.split->mode() == runtime::SplitMode::Row) {  // devices sharing every layer
    out["row_split"] = m.split->num_stages();
  } else if (m.split) {  // layers per device, in stage order
    std::vector<uint32_t> layers;
    for (size_t i = 0; i < m.split->num_stages(); ++i)
      layers.push_back(m.split->stage(i).layers().end - m.split->stage(i).layers().first);
    out["layer_split"] = layers;
  }

  // Prefill: one sequence, the whole prompt after `depth` tokens of context; best of three after
  // warm-up prompts (at depth the context is built once and the prompt timed once: building it
  // again would cost more than the measurement). The warm-up lasts at least kWarmUpSeconds: a GPU
  // that idled while the model loaded runs at a fraction of its clock until it has been busy for
  // a while (an H100 read 1B prefill at 14917 tok/s right after idling, 62000-63000 after one run;
  // bench/results/HISTORY.md, Nineteenth session), and one 1B prompt is a few milliseconds.
  {
    auto prompt = random_tokens(args.prompt_tokens);
    double best = 1e30;
    const auto warm_up_start = Clock::now();
    for (int rep = 0, timed = 0; timed < (args.depth ? 1 : 3); ++rep) {
      runtime::Generator gen(runner);
      // Building the context compiles the pipelines, so the one timed prompt needs no warm-up.
      if (args.depth) gen.feed(random_tokens(args.depth));
      auto t0 = Clock::now();
      gen.feed(prompt);
      const double seconds = seconds_since(t0);
      if (args.depth || (rep > 0 && seconds_since(warm_up_start) >= kWarmUpSeconds)) {
        best = std::min(best, seconds);
        ++timed;
      }
    }
    out["prefill"] = {{"tokens", args.prompt_tokens}, {"tok_per_s", args.prompt_tokens / best}};
    add_gpu_phases(out["prefill"], runner.last_step_timings());
  }

  // B sequences holding their context: a short prompt each (llama-batched-bench -npp 8),
  // prefilled in groups that fit one step, or `depth` tokens each, prefilled one sequence at a
  // time in chunks.
  auto contexts = [&](uint32_t batch) {
    std::vector<kv::BlockTable> tables;
    tables.reserve(batch);
    for (uint32_t s = 0; s < batch; ++s) tables.emplace_back(runner.pool(), runner.block_size());
    std::vector<std::vector<int32_t>> prompts(batch);
    std::vector<runtime::SequenceStep> steps(batch);
    if (args.depth == 0) {
      for (uint32_t s = 0; s < batch; ++s) {
        prompts[s] = random_tokens(8);
        steps[s] = {&tables[s], prompts[s], runtime::LogitsWanted::Last};
      }
      for (uint32_t s = 0; s < batch; s += 32) {
        const uint32_t n = std::min<uint32_t>(32, batch - s);
        runner.step(std::span(steps).subspan(s, n), true);
      }
      return tables;
    }
    const uint32_t chunk = runner.options().max_batch_tokens;
    for (uint32_t s = 0; s < batch; ++s) {
      const auto context = random_tokens(args.depth);
      for (uint32_t i = 0; i < args.depth; i += chunk) {
        runtime::SequenceStep step{&tables[s],
                                   std::span(context).subspan(i, std::min(chunk, args.depth - i)),
                                   runtime::LogitsWanted::Last};
        runner.step(std::span(&step, 1), true);
      }
    }
    return tables;
  };

  // B sequences with their context, then steps where each brings `per_seq` tokens: one (decode:
  // the last row's logits) or its last token and per_seq - 1 drafts (a speculative verification:
  // provisional, greedy rows at every position, then all committed, so that every step has the
  // same shape). Warm-up: at least 4 steps and kWarmUpSeconds / 2 (the clocks, as for prefill),
  // at most kMaxWarmUpSteps tokens a sequence; then gen_tokens tokens a sequence are timed.
  auto measure_steps = [&](uint32_t batch, uint32_t per_seq) {
    std::vector<kv::BlockTable> tables = contexts(batch);
    std::vector<std::vector<int32_t>> next(batch);
    std::vector<runtime::SequenceStep> steps(batch);
    const bool verify = per_seq > 1;
    auto run_steps = [&](uint32_t count) {
      for (uint32_t i = 0; i < count; ++i) {
        for (uint32_t s = 0; s < batch; ++s) {
          next[s] = random_tokens(per_seq);
          steps[s] = {&tables[s], next[s],
                      verify ? runtime::LogitsWanted::All : runtime::LogitsWanted::Last, verify};
        }
        runner.step(steps, true);
        if (verify)
          for (uint32_t s = 0; s < batch; ++s) tables[s].commit(next[s]);
      }
    };
    const auto warm_up_start = Clock::now();
    for (uint32_t i = 0; i < kMaxWarmUpSteps / per_seq &&
                         (i < 4 || seconds_since(warm_up_start) < kWarmUpSeconds / 2);
         ++i)
      run_steps(1);
    const uint32_t count = std::max(1u, args.gen_tokens / per_seq);
    const double cpu0 = process_cpu_seconds();
    const double thread_cpu0 = thread_cpu_seconds();
    const uint64_t ahead0 = runner.steps_recorded_ahead();
    auto t0 = Clock::now();
    run_steps(count);
    const double wall = seconds_since(t0);
    const double cpu = process_cpu_seconds() - cpu0;
    const double thread_cpu = thread_cpu_seconds() - thread_cpu0;
    nlohmann::json d = {{"batch", batch},
                        {"tokens", batch * per_seq * count},
                        {"tok_per_s", batch * per_seq * count / wall},
                        {"ms_per_step", 1e3 * wall / count},
                        {"cpu_ms_per_step", 1e3 * cpu / count},
                        {"thread_cpu_ms_per_step", 1e3 * thread_cpu / count},
                        {"steps", count},
                        {"steps_recorded_ahead", runner.steps_recorded_ahead() - ahead0}};
    if (verify) d["drafted"] = per_seq - 1;
    add_gpu_phases(d, runner.last_step_timings());
    return d;
  };
  nlohmann::json decode = nlohmann::json::array(), verify = nlohmann::json::array();
  for (uint32_t batch : args.batches) decode.push_back(measure_steps(batch, 1));
  out["decode"] = decode;
  // Verification at the batches the scheduler speculates at (up to 16 sequences).
  for (uint32_t batch : args.batches)
    if (args.verify > 0 && batch <= 16) verify.push_back(measure_steps(batch, args.verify + 1));
  if (!verify.empty()) out["verify"] = verify;
  out["device_bytes"] = runner.device_bytes();
  out["device_bytes_by_device"] = runner.device_bytes_by_device();
  out["kv_bytes"] = runner.kv_bytes();
  out["copy_gbps"] = m.on_cpu() ? host_copy_bandwidth_gbps() : copy_bandwidth_gbps(*m.ctx);
  // Roofline for batch-1 decode: every weight byte is read once per token.
  const double roof = out["copy_gbps"].get<double>() * 1e9 / double(m.weight_bytes());
  out["roofline_tok_per_s"] = roof;
  out["roofline_fraction_batch1"] =
      decode.empty() ? 0.0 : decode[0]["tok_per_s"].get<double>() / roof;

  if (args.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("%s on %s: %.2f GB of weights, loaded in %.1f s; %s KV cache of %u blocks\n",
                args.model.c_str(), m.device_name().c_str(), m.weight_bytes() / 1e9, load_s,
                std::string(kv::cache_type_name(opts.kv_cache_type)).c_str(),
                static_cast<unsigned>(runner.pool().num_blocks()));
    if (out.contains("row_split")) {
      std::printf("rows split over %u devices\n", out["row_split"].get<unsigned>());
    }
    if (out.contains("layer_split")) {
      std::string split;
      for (const auto& n : out["layer_split"]) split += (split.empty() ? "" : "+") + n.dump();
      std::printf("layers split %s across the devices\n", split.c_str());
    }
    std::printf("prefill %u tokens after %u of context: %.1f tok/s\n", args.prompt_tokens,
                args.depth, out["prefill"]["tok_per_s"].get<double>());
    print_gpu_phases(out["prefill"]);
    for (const auto& d : decode) {
      std::printf(
          "decode batch %3u: %9.1f tok/s  %7.2f ms/step  cpu %.3f ms/step  gpu %.3f  recorded "
          "ahead %llu of %u\n",
          d["batch"].get<uint32_t>(), d["tok_per_s"].get<double>(), d["ms_per_step"].get<double>(),
          d["cpu_ms_per_step"].get<double>(), d.value("gpu_ms_per_step", 0.0),
          static_cast<unsigned long long>(d["steps_recorded_ahead"].get<uint64_t>()),
          d["steps"].get<uint32_t>());
      print_gpu_phases(d);
    }
    for (const auto& d : out.value("verify", nlohmann::json::array())) {
      std::printf(
          "verify batch %3u x %u+1: %9.1f tok/s scored  %7.2f ms/step  cpu %.3f ms/step  gpu "
          "%.3f  recorded ahead %llu of %u\n",
          d["batch"].get<uint32_t>(), d["drafted"].get<uint32_t>(), d["tok_per_s"].get<double>(),
          d["ms_per_step"].get<double>(), d["cpu_ms_per_step"].get<double>(),
          d.value("gpu_ms_per_step", 0.0),
          static_cast<unsigned long long>(d["steps_recorded_ahead"].get<uint64_t>()),
          d["steps"].get<uint32_t>());
      print_gpu_phases(d);
    }
    std::printf(
        "device memory: %.2f GB (KV %.2f GB); copy bandwidth %.0f GB/s; batch-1 roofline "
        "%.1f tok/s (%.0f%% reached)\n",
        runner.device_bytes() / 1e9, runner.kv_bytes() / 1e9, out["copy_gbps"].get<double>(), roof,
        100 * out["roofline_fraction_batch1"].get<double>());
  }
  return 0;
}

}  // namespace vkllm::cli
