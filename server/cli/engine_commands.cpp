// Engine commands that run a GGUF file directly on the device, without the server:
// generate, debug logits, perplexity, bench.
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/runner.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/incremental_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/commands.h"
#include "server/cli/engine_bench.h"
#include "server/cli/engine_model.h"
#include "server/cli/stopwatch.h"

namespace vkllm::cli {

namespace {

using Clock = std::chrono::steady_clock;
// Everything a command needs to run a model file.
struct LoadedModel : EngineModel {
  std::unique_ptr<tokenizer::Tokenizer> tok;

  LoadedModel(const std::string& path, const std::string& device,
              const sched::ManagerOptions& engine, const std::string& lora = {})
      : EngineModel(path, device, engine, lora), tok(tokenizer::Tokenizer::from_gguf(file)) {}
};

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

void add_generate(CLI::App& app) {
  struct Args {
    std::string model, prompt, device, lora;
    std::vector<std::string> tunes;
    int num_predict = 128;
    float temperature = 0.8f;
    int64_t seed = -1;
    bool no_bos = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt with a GGUF model");
  cmd->add_option("--model", args->model, "GGUF file")->required();
  cmd->add_option("--prompt", args->prompt, "Prompt text")->required();
  cmd->add_option("--num-predict,-n", args->num_predict, "Tokens to generate (-1: until EOS)");
  cmd->add_option("--temperature", args->temperature, "Sampling temperature (0: greedy)");
  cmd->add_option("--seed", args->seed, "Random seed (-1: random)");
  cmd->add_flag("--no-bos", args->no_bos, "Do not add the BOS token");
  cmd->add_option("--lora", args->lora, "LoRA adapter GGUF to merge into the model");
  add_device_option(cmd, args->device);
  add_tune_option(cmd, args->tunes);
  cmd->callback([args] {
    run_command([&] {
      LoadedModel m(args->model, args->device, engine_settings(args->tunes), args->lora);
      auto prompt = m.tok->encode(args->prompt, !args->no_bos, true);
      if (args->no_bos && !prompt.empty() && prompt.front() == m.tok->bos())
        prompt.erase(prompt.begin());
      if (prompt.empty()) throw std::runtime_error("the prompt has no tokens");
      sampling::SamplingParams sp;
      sp.temperature = args->temperature;
      sp.seed = args->seed;
      sampling::Sampler sampler(sp);
      for (int32_t t : prompt) sampler.accept(t);
      runtime::Generator gen(*m.runner);
      tokenizer::IncrementalDecoder decoder(*m.tok, /*at_text_start=*/false);

      auto t0 = Clock::now();
      auto logits = gen.feed(prompt);
      const double prefill_s = seconds_since(t0);
      auto t1 = Clock::now();
      int generated = 0;
      while (args->num_predict < 0 || generated < args->num_predict) {
        const int32_t next = sampler.sample(logits);
        if (m.tok->is_end_of_generation(next)) break;
        sampler.accept(next);
        std::cout << decoder.push(next) << std::flush;
        ++generated;
        if (args->num_predict >= 0 && generated >= args->num_predict) break;
        logits = gen.feed(std::span(&next, 1));
      }
      std::cout << decoder.finish() << std::endl;
      const double decode_s = seconds_since(t1);
      std::fprintf(stderr, "prompt: %zu tokens, %.1f tok/s; decode: %d tokens, %.1f tok/s\n",
                   prompt.size(), prompt.size() / prefill_s, generated,
                   generated > 0 ? generated / decode_s : 0.0);
      return 0;
    });
  });
}

void add_debug_logits(CLI::App& app) {
  struct Args {
    std::string model, prompt, device, lora;
    std::vector<std::string> tunes;
    bool no_bos = false;
    int greedy = 0;
  };
  auto args = std::make_shared<Args>();
  auto* debug = app.add_subcommand("debug", "Developer diagnostics");
  debug->require_subcommand(1);
  auto* cmd = debug->add_subcommand("logits", "Print prompt tokens, last logits and greedy tokens");
  cmd->add_option("--model", args->model, "GGUF file")->required();
  cmd->add_option("--prompt", args->prompt, "Prompt text")->required();
  cmd->add_flag("--no-bos", args->no_bos, "Do not add the BOS token");
  cmd->add_option("--greedy", args->greedy, "Tokens of greedy continuation");
  cmd->add_option("--lora", args->lora, "LoRA adapter GGUF to merge into the model");
  add_device_option(cmd, args->device);
  add_tune_option(cmd, args->tunes);
  cmd->callback([args] {
    run_command([&] {
      LoadedModel m(args->model, args->device, engine_settings(args->tunes), args->lora);
      auto tokens = m.tok->encode(args->prompt, !args->no_bos, true);
      if (args->no_bos && !tokens.empty() && tokens.front() == m.tok->bos())
        tokens.erase(tokens.begin());
      if (tokens.empty()) throw std::runtime_error("the prompt has no tokens");
      runtime::Generator gen(*m.runner);
      auto logits = gen.feed(tokens);
      std::vector<int32_t> greedy;
      int32_t next = argmax(logits);
      for (int i = 0; i < args->greedy; ++i) {
        greedy.push_back(next);
        if (i + 1 < args->greedy) next = argmax(gen.feed(std::span(&next, 1)));
      }
      nlohmann::json j{{"tokens", tokens}, {"logits", logits}, {"greedy_tokens", greedy}};
      std::cout << j.dump() << "\n";
      return 0;
    });
  });
}

void add_perplexity(CLI::App& app) {
  struct Args {
    std::string model, file, device;
    std::vector<std::string> tunes;
    uint32_t ctx = 512;
    int chunks = -1;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("perplexity", "Perplexity over a text file, as llama-perplexity");
  cmd->add_option("--model", args->model, "GGUF file")->required();
  cmd->add_option("--file", args->file, "Text file")->required();
  cmd->add_option("--ctx", args->ctx, "Tokens per chunk")->check(CLI::Range(16u, 1u << 20));
  cmd->add_option("--chunks", args->chunks, "Chunks to score (-1: all)");
  add_device_option(cmd, args->device);
  add_tune_option(cmd, args->tunes);
  cmd->callback([args] {
    run_command([&] {
      sched::ManagerOptions engine = engine_settings(args->tunes);
      runtime::RunnerOptions& opts = engine.runner;
      opts.max_context = std::max(opts.max_context, args->ctx);
      opts.max_logits_rows = opts.max_batch_tokens;
      LoadedModel m(args->model, args->device, engine);
      std::ifstream in(args->file, std::ios::binary);
      if (!in) throw std::runtime_error("cannot read " + args->file);
      std::stringstream ss;
      ss << in.rdbuf();
      // Like llama-perplexity: tokenize the whole text once (BOS first), cut it into chunks of
      // ctx tokens, put BOS at the start of each, and score the second half of every chunk.
      const auto tokens = m.tok->encode(ss.str(), true, false);
      const size_t n_ctx = args->ctx;
      size_t n_chunks = tokens.size() / n_ctx;
      if (args->chunks >= 0) n_chunks = std::min<size_t>(n_chunks, args->chunks);
      if (n_chunks == 0) throw std::runtime_error("the text has fewer tokens than --ctx");
      const size_t n_vocab = m.spec().n_vocab;
      const size_t first = n_ctx / 2;
      double nll = 0;
      size_t count = 0;
      runtime::Generator gen(*m.runner);
      auto t0 = Clock::now();
      for (size_t c = 0; c < n_chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (m.tok->add_bos()) chunk[0] = m.tok->bos();
        gen.reset();
        auto rows = gen.feed(chunk, /*all_rows=*/true);
        for (size_t i = first; i + 1 < n_ctx; ++i) {
          const float* row = rows.data() + i * n_vocab;
          const float mx = *std::max_element(row, row + n_vocab);
          double sum = 0;
          for (size_t v = 0; v < n_vocab; ++v) sum += std::exp(double(row[v]) - mx);
          nll += -(double(row[chunk[i + 1]]) - mx - std::log(sum));
          ++count;
        }
        std::fprintf(stderr, "[%zu]%.4f ", c + 1, std::exp(nll / count));
      }
      std::fprintf(stderr, "\n%zu chunks of %zu tokens in %.1f s\n", n_chunks, n_ctx,
                   seconds_since(t0));
      std::printf("ppl = %.4f\n", std::exp(nll / count));
      return 0;
    });
  });
}

void add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Measure prefill and batched decode speed");
  cmd->add_option("--model", args->model, "GGUF file")->required();
  cmd->add_option("--batch", args->batches, "Decode batch sizes")->delimiter(',');
  cmd->add_option("--prompt", args->prompt_tokens, "Prompt tokens for prefill");
  cmd->add_option("--gen", args->gen_tokens, "Tokens decoded per sequence");
  cmd->add_option("--depth", args->depth,
                  "Tokens of context before prefill and decode are timed (llama-bench -d)");
  cmd->add_option("--verify", args->verify,
                  "Also time speculative verification steps of this many drafted tokens per "
                  "sequence (at each --batch up to 16)");
  cmd->add_flag("--json", args->json, "Print JSON");
  add_device_option(cmd, args->device);
  add_tune_option(cmd, args->tunes);
  cmd->add_flag("--cold", args->cold,
                "Measure start-up: load, pipeline creation, first request's time to first token");
  cmd->callback([args] {
    run_command([&] { return args->cold ? run_cold_start_bench(*args) : run_bench(*args); });
  });
}

}  // namespace

void add_engine_commands(CLI::App& app) {
  add_generate(app);
  add_debug_logits(app);
  add_perplexity(app);
  add_bench(app);
}

}  // namespace vkllm::cli
