#include "engine/runtime/embedder.h"

#include <algorithm>
#include <list>
#include <stdexcept>
#include <string>

#include "engine/kv/block_table.h"
#include "engine/runtime/host_model.h"

namespace vkllm::runtime {

namespace {

using model::Pooling;

EncoderOptions encoder_options(const EmbedderOptions& o) {
  EncoderOptions e;
  e.max_batch_tokens = o.max_batch_tokens;
  e.max_inputs = o.max_inputs;
  e.matvec_max_batch = o.matvec_max_batch;
  e.warm_up = o.warm_up;
  return e;
}

// A Runner for a decoder used only as an embedder, with KV for one longest input plus a full step
// of others. Last-token pooling needs one output row per input; pooling over every token needs a
// row per token, as many as a logits buffer of at most 64 MiB holds (the Runner sizes its
// logits for them, and some devices bind at most 128 MiB).
RunnerOptions decoder_runner_options(const model::ModelSpec& spec, const EmbedderOptions& o) {
  RunnerOptions r;
  r.warm_up = o.warm_up;
  r.max_batch_tokens = o.max_batch_tokens;
  r.max_seqs = std::clamp<uint32_t>(o.max_inputs, 1, 64);
  if (spec.pooling != Pooling::Last) {
    const uint64_t rows = (uint64_t{64} << 20) / (4ull * std::max<uint32_t>(spec.n_vocab, 1));
    r.max_logits_rows = static_cast<uint32_t>(
        std::clamp<uint64_t>(rows, r.max_seqs, std::max(r.max_seqs, o.max_batch_tokens)));
  }
  r.max_context = std::min<uint32_t>(spec.n_ctx_train ? spec.n_ctx_train : 2048, 8192);
  const uint64_t per_block =
      2ull * spec.n_layer * spec.n_head_kv * r.block_size * spec.head_dim * 2;  // K and V, f16
  const uint64_t blocks =
      (uint64_t(r.max_context) + o.max_batch_tokens) / r.block_size + r.max_seqs + 2;
  r.kv_budget_bytes = per_block * blocks;
  return r;
}

void check_inputs(std::span<const std::vector<int32_t>> inputs, uint32_t max_tokens) {
  for (const auto& in : inputs) {
    if (in.empty()) throw std::invalid_argument("embedding input is empty");
    if (in.size() > max_tokens) {
      throw std::invalid_argument("embedding input of " + std::to_string(in.size()) +
                                  " tokens exceeds the limit of " + std::to_string(max_tokens));
    }
  }
}

}  // namespace

// Model (Vulkan) or HostModel (CPU): Encoder and Runner take either.
template <class M>
void Embedder::start(M& model) {
  options_.max_inputs = std::max<uint32_t>(options_.max_inputs, 1);
  options_.max_batch_tokens = std::max(options_.max_batch_tokens, options_.max_inputs);
  if (spec_.is_encoder()) {
    encoder_ = std::make_unique<Encoder>(model, encoder_options(options_));
  } else {
    own_runner_ = std::make_unique<Runner>(model, decoder_runner_options(spec_, options_));
    runner_ = own_runner_.get();
  }
}

Embedder::Embedder(Model& model, const EmbedderOptions& options)
    : spec_(model.spec()), options_(options) {
  start(model);
}

Embedder::Embedder(const HostModel& model, const EmbedderOptions& options)
    : spec_(model.spec()), options_(options) {
  start(model);
}

Embedder::Embedder(Runner& runner) : spec_(runner.spec()), runner_(&runner) {
  options_.max_batch_tokens = runner.options().max_batch_tokens;
  options_.max_inputs = runner.options().max_seqs;
}

Embedder::~Embedder() = default;

uint32_t Embedder::max_input_tokens() const {
  return encoder_ ? encoder_->max_input_tokens() : runner_->options().max_context;
}

uint64_t Embedder::device_bytes() const {
  if (encoder_) return encoder_->device_bytes();
  return own_runner_ ? own_runner_->device_bytes() - own_runner_->weight_bytes() : 0;
}

std::vector<std::vector<float>> Embedder::embed(std::span<const std::vector<int32_t>> inputs) {
  check_inputs(inputs, max_input_tokens());
  if (!encoder_) return embed_decoder(inputs);
  // Whole inputs, packed in order into steps within the encoder's limits.
  std::vector<std::vector<float>> out;
  out.reserve(inputs.size());
  const EncoderOptions& lim = encoder_->options();
  for (size_t i = 0; i < inputs.size();) {
    std::vector<std::span<const int32_t>> step;
    uint32_t tokens = 0;
    while (i < inputs.size() && step.size() < lim.max_inputs &&
           tokens + inputs[i].size() <= lim.max_batch_tokens) {
      tokens += static_cast<uint32_t>(inputs[i].size());
      step.emplace_back(inputs[i++]);
    }
    for (auto& v : encoder_->encode(step)) out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::vector<float>> Embedder::embed_decoder(
    std::span<const std::vector<int32_t>> inputs) {
  Runner& runner = *runner_;
  const uint32_t E = spec_.n_embd, bs = runner.block_size();
  const RunnerOptions& lim = runner.options();
  // Mean, first-token and per-token outputs need every row; last-token pooling only the last.
  const bool all_rows = spec_.pooling != Pooling::Last && spec_.pooling != Pooling::Rank;
  if (spec_.pooling == Pooling::Rank) {
    throw std::invalid_argument(spec_.arch_name + " has no classification head for rank pooling");
  }

  struct Job {
    size_t index;
    size_t done = 0;
    std::optional<kv::BlockTable> table;
    std::vector<float> acc;
  };
  std::vector<std::vector<float>> out(inputs.size());
  std::list<Job> active;
  size_t next = 0;
  while (next < inputs.size() || !active.empty()) {
    // Admit inputs whose whole KV fits now: a started input never waits for blocks.
    while (next < inputs.size() && active.size() < lim.max_seqs) {
      Job& job = active.emplace_back(Job{next, 0, std::nullopt, {}});
      job.table.emplace(runner.pool(), bs);
      if (!job.table->reserve(static_cast<uint32_t>(inputs[next].size()))) {
        active.pop_back();
        if (active.empty()) {
          throw std::runtime_error("KV cache is full: no room for an embedding input of " +
                                   std::to_string(inputs[next].size()) + " tokens");
        }
        break;
      }
      ++next;
    }

    // One step: a chunk of every active input, within the token and row limits.
    std::vector<SequenceStep> steps;
    std::vector<Job*> owners;
    uint32_t tokens = 0, rows = 0;
    for (Job& job : active) {
      const auto& in = inputs[job.index];
      const uint32_t rest = static_cast<uint32_t>(in.size() - job.done);
      uint32_t n = std::min(rest, lim.max_batch_tokens - tokens);
      if (all_rows) n = std::min(n, lim.max_logits_rows - rows);
      if (n == 0) break;
      const bool last = n == rest;
      const LogitsWanted want = all_rows ? LogitsWanted::All
                                : last   ? LogitsWanted::Last
                                         : LogitsWanted::None;
      steps.push_back({&*job.table, std::span(in).subspan(job.done, n), want});
      owners.push_back(&job);
      tokens += n;
      rows += want == LogitsWanted::All ? n : want == LogitsWanted::Last ? 1 : 0;
    }
    const StepResult res = runner.step_hidden(steps);

    for (size_t i = 0; i < steps.size(); ++i) {
      Job& job = *owners[i];
      const uint32_t n = static_cast<uint32_t>(steps[i].tokens.size());
      const std::vector<float> empty;
      const std::vector<float>& h = i < res.hidden.size() ? res.hidden[i] : empty;
      switch (spec_.pooling) {
        case Pooling::Mean:
          job.acc.resize(E, 0.0f);
          for (uint32_t r = 0; r < n; ++r) {
            for (uint32_t e = 0; e < E; ++e) job.acc[e] += h[size_t{r} * E + e];
          }
          break;
        case Pooling::Cls:
          if (job.done == 0) job.acc.assign(h.begin(), h.begin() + E);
          break;
        case Pooling::Last:
        case Pooling::Rank:
          if (!h.empty()) job.acc.assign(h.end() - E, h.end());
          break;
        case Pooling::None:
          job.acc.insert(job.acc.end(), h.begin(), h.end());
          break;
      }
      job.done += n;
    }
    // Finished inputs give their blocks back at once.
    for (auto it = active.begin(); it != active.end();) {
      if (it->done < inputs[it->index].size()) {
        ++it;
        continue;
      }
      if (spec_.pooling == Pooling::Mean) {
        for (float& v : it->acc) v /= static_cast<float>(inputs[it->index].size());
      }
      out[it->index] = std::move(it->acc);
      it = active.erase(it);
    }
  }
  return out;
}

std::vector<float> Embedder::rerank(std::span<const std::vector<int32_t>> pairs) {
  if (spec_.pooling != Pooling::Rank) {
    throw std::logic_error(spec_.arch_name + " model is not a reranker (pooling is not rank)");
  }
  std::vector<float> scores;
  scores.reserve(pairs.size());
  for (const auto& v : embed(pairs)) scores.push_back(v.at(0));
  return scores;
}

std::vector<int32_t> rerank_input(const tokenizer::Tokenizer& tokenizer,
                                  std::span<const int32_t> query,
                                  std::span<const int32_t> document) {
  const auto& v = tokenizer.vocab();
  const int32_t eos = v.eos >= 0 ? v.eos : v.sep;
  std::vector<int32_t> out;
  out.reserve(query.size() + document.size() + 4);
  if (tokenizer.add_bos() && v.bos >= 0) out.push_back(v.bos);
  out.insert(out.end(), query.begin(), query.end());
  if (eos >= 0) out.push_back(eos);
  // RoBERTa-style pairs repeat the separator; WordPiece's [SEP] is the end token itself.
  if (v.kind != tokenizer::VocabKind::kWordPiece && v.sep >= 0) out.push_back(v.sep);
  out.insert(out.end(), document.begin(), document.end());
  if (eos >= 0) out.push_back(eos);
  return out;
}

}  // namespace vkllm::runtime
