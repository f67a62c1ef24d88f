#include "engine/runtime/runner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/kv/kv_layout.h"
#include "engine/runtime/cpu_backend.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/row_split_backend.h"
#include "engine/runtime/split_backend.h"
#include "engine/runtime/split_model.h"
#include "engine/runtime/step_backend.h"
#include "engine/runtime/vulkan_backend.h"

namespace vkllm::runtime {

namespace {

// Limits every backend shares: a context within the model's, at least one sequence, a step
// that holds one token of each, logits rows for every sequence.
RunnerOptions with_limits(const model::ModelSpec& spec, RunnerOptions opt) {
  if (spec.is_encoder()) {
    throw std::invalid_argument(spec.arch_name + " is an encoder model: run it with an Encoder");
  }
  if (!kv::cache_type_fits(opt.kv_cache_type, spec.head_dim) ||
      !kv::cache_type_fits(opt.kv_cache_type, spec.head_dim_v)) {
    throw std::invalid_argument("a " + std::string(kv::cache_type_name(opt.kv_cache_type)) +
                                " KV cache needs head dimensions that are multiples of 32; " +
                                spec.arch_name + " has " + std::to_string(spec.head_dim));
  }
  if (opt.max_context == 0) opt.max_context = std::min<uint32_t>(spec.n_ctx_train, 8192);
  if (opt.max_context == 0) opt.max_context = 2048;
  opt.max_seqs = std::max<uint32_t>(opt.max_seqs, 1);
  opt.max_batch_tokens = std::max(opt.max_batch_tokens, opt.max_seqs);
  opt.max_logits_rows = std::max(opt.max_seqs, opt.max_logits_rows);
  return opt;
}

// Whether token j of the step lies in one of its embedding spans (ids there are not looked up).
bool in_span(const SequenceStep& s, uint32_t j) {
  for (const auto& e : s.embeddings)
    if (j >= e.offset && j - e.offset < e.n) return true;
  return false;
}

// Checks a sequence's embedding spans against its tokens (std::invalid_argument naming why).
void check_spans(const SequenceStep& s, bool enabled) {
  if (s.embeddings.empty()) return;
  if (!enabled)
    throw std::invalid_argument(
        "Runner::step: embedding rows need RunnerOptions::embedding_inputs");
  uint32_t end = 0;
  for (size_t i = 0; i < s.embeddings.size(); ++i) {
    const auto& e = s.embeddings[i];
    if (e.n == 0 || !e.rows || e.offset < end || e.offset + uint64_t(e.n) > s.tokens.size())
      throw std::invalid_argument("Runner::step: embedding span outside its tokens or overlapping");
    if (e.open && (i + 1 != s.embeddings.size() || e.offset + e.n != s.tokens.size()))
      throw std::invalid_argument("Runner::step: an open embedding span must end its tokens");
    end = e.offset + e.n;
  }
}

uint32_t rows_wanted(const SequenceStep& s) {
  return s.logits == LogitsWanted::All    ? static_cast<uint32_t>(s.tokens.size())
         : s.logits == LogitsWanted::Last ? 1
                                          : 0;
}

}  // namespace

Runner::Runner(Model& model, const RunnerOptions& options)
    : spec_(&model.spec()),
      weight_bytes_(model.weight_bytes()),
      options_(with_limits(model.spec(), options)) {
  backend_ = make_vulkan_backend(model, options_);
  start();
}

Runner::Runner(const HostModel& model, const RunnerOptions& options)
    : spec_(&model.spec()),
      weight_bytes_(model.weight_bytes()),
      options_(with_limits(model.spec(), options)) {
  backend_ = make_cpu_backend(model, options_);
  start();
}

Runner::Runner(SplitModel& model, const RunnerOptions& options)
    : spec_(&model.spec()),
      weight_bytes_(model.weight_bytes()),
      options_(with_limits(model.spec(), options)) {
  for (size_t i = 0; i < model.num_stages(); ++i)
    stage_weight_bytes_.push_back(model.stage(i).weight_bytes());
  backend_ = model.mode() == SplitMode::Row ? make_row_split_backend(model, options_)
                                            : make_split_backend(model, options_);
  start();
}

void Runner::start() {
  if (stage_weight_bytes_.empty()) stage_weight_bytes_.push_back(weight_bytes_);
  options_.max_batch_tokens = backend_->max_batch_tokens();
  options_.max_logits_rows = backend_->max_logits_rows();
  forward_ = std::make_unique<Forward>(*spec_);
  pool_ = std::make_unique<kv::BlockPool>(backend_->kv_layout().num_blocks,
                                          backend_->state_layout().n_slots,
                                          backend_->state_checkpoints());
  if (options_.warm_up) warm_up();
}

Runner::~Runner() = default;

uint64_t Runner::moe_grouped_ffns() const {
  return backend_->moe_grouped_ffns();
}

uint64_t Runner::moe_grouped_matvec_ffns() const {
  return backend_->moe_grouped_matvec_ffns();
}

uint64_t Runner::moe_int8_ffns() const {
  return backend_->moe_int8_ffns();
}

uint64_t Runner::kv_bytes() const {
  return backend_->kv_bytes();
}
uint64_t Runner::device_bytes() const {
  return weight_bytes_ + backend_->kv_bytes() + backend_->activation_bytes();
}

std::vector<uint64_t> Runner::device_bytes_by_device() const {
  std::vector<uint64_t> out = backend_->device_step_bytes();
  for (size_t i = 0; i < out.size() && i < stage_weight_bytes_.size(); ++i)
    out[i] += stage_weight_bytes_[i];
  return out;
}

StepResult Runner::step(std::span<SequenceStep> batch, bool greedy_only) {
  return run_step(batch, greedy_only ? Rows::greedy : Rows::logits);
}

StepResult Runner::step_hidden(std::span<SequenceStep> batch) {
  return run_step(batch, Rows::hidden);
}

StepResult Runner::step_draft(std::span<SequenceStep> batch) {
  return run_step(batch, Rows::greedy_and_hidden);
}

StepResult Runner::run_step(std::span<SequenceStep> batch, Rows wanted) {
  const bool hidden = wanted == Rows::hidden;
  StepBackend& B = *backend_;
  const auto& spec = *spec_;
  if (batch.empty()) throw std::invalid_argument("Runner::step: empty batch");
  if (batch.size() > options_.max_seqs) {
    throw std::invalid_argument("Runner::step: " + std::to_string(batch.size()) +
                                " sequences exceed the limit of " +
                                std::to_string(options_.max_seqs));
  }
  uint32_t T = 0, R = 0;
  bool injected = false;
  for (const auto& s : batch) {
    if (!s.table || s.tokens.empty()) throw std::invalid_argument("Runner::step: empty sequence");
    check_spans(s, options_.embedding_inputs);
    if (!s.rope_positions.empty() &&
        (!spec.uses_mrope() || s.rope_positions.size() != 3 * s.tokens.size())) {
      throw std::invalid_argument(spec.uses_mrope()
                                      ? "Runner::step: rope_positions needs 3 per token"
                                      : "Runner::step: rope_positions for a model without M-RoPE");
    }
    injected |= !s.embeddings.empty();
    if (spec.nextn_head ? s.hidden_in.size() != s.tokens.size() * spec.n_embd
                        : !s.hidden_in.empty()) {
      throw std::invalid_argument(spec.nextn_head
                                      ? "Runner::step: a NextN block's step needs n_embd hidden "
                                        "inputs for each token"
                                      : "Runner::step: hidden inputs for a model that reads none");
    }
    injected |= spec.nextn_head;
    if (s.table->num_tokens() + s.tokens.size() > options_.max_context) {
      throw std::invalid_argument("Runner::step: sequence exceeds the context of " +
                                  std::to_string(options_.max_context) + " tokens");
    }
    T += static_cast<uint32_t>(s.tokens.size());
    R += rows_wanted(s);
  }
  // Hybrid models: a recurrent state only advances, so a provisional sequence keeps the state
  // after each of its tokens but the last in captured slots (the last is the live state), from
  // which keep_provisional() takes the one after the tokens accepted.
  captured_.clear();
  uint32_t capture_next = backend_->state_layout().n_slots;
  // (A runner that keeps none runs provisional steps without them: its caller keeps the whole
  // step or brings the state back itself, save_states.)
  const bool captures = spec.has_recurrent_state() && options_.draft_states > 0;
  if (captures) {
    const kv::StateLayout& st = backend_->state_layout();
    uint32_t wanted = 0;
    for (const auto& s : batch)
      if (s.provisional) wanted += static_cast<uint32_t>(s.tokens.size()) - 1;
    if (wanted > st.n_capture) {
      throw std::invalid_argument(
          "Runner::step: " + spec.arch_name + " has recurrent layers: a speculative step's " +
          std::to_string(wanted) + " drafted tokens need as many kept states, and the runner " +
          "keeps " + std::to_string(st.n_capture) + " (RunnerOptions::draft_states)");
    }
  }
  if (T > options_.max_batch_tokens) {
    throw std::invalid_argument("Runner::step: " + std::to_string(T) +
                                " tokens exceed the limit of " +
                                std::to_string(options_.max_batch_tokens));
  }
  if (R > options_.max_logits_rows) {
    throw std::invalid_argument("Runner::step: " + std::to_string(R) +
                                " logits rows exceed the limit of " +
                                std::to_string(options_.max_logits_rows));
  }
  // Blocks (and recurrent-state slots) for the new tokens; all or nothing across the batch.
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].table->reserve(static_cast<uint32_t>(batch[i].tokens.size()))) {
      for (size_t j = 0; j < i; ++j) batch[j].table->trim_reserved();
      throw std::runtime_error("KV cache is full: no free blocks for this step");
    }
  }
  if (spec.has_recurrent_state()) restore_states(batch);

  // Step inputs: token ids, rows that produce logits, batch metadata.
  std::vector<kv::BatchSequence> seqs;
  seqs.reserve(batch.size());
  uint32_t* ids = B.token_ids();
  uint32_t* sel = B.selected_rows();
  uint32_t* rope_pos = spec.uses_mrope() ? B.rope_positions() : nullptr;
  uint32_t t = 0, r = 0;
  std::vector<uint32_t> last_row(batch.size(), UINT32_MAX);
  std::vector<InjectedRows> injected_rows;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& s = batch[i];
    const uint32_t n = static_cast<uint32_t>(s.tokens.size());
    seqs.push_back({std::span<const uint32_t>(s.table->blocks().data(), s.table->blocks().size()),
                    n, s.table->num_tokens() + n, s.table->state_slot().value_or(0)});
    if (s.provisional && captures && n > 1) {
      seqs.back().capture_from = capture_next;
      captured_.push_back({s.table, capture_next, n});
      capture_next += n - 1;
    }
    if (!s.hidden_in.empty()) injected_rows.push_back({t, n, s.hidden_in.data()});
    for (const auto& e : s.embeddings) {
      injected_rows.push_back({t + e.offset, e.n, e.rows});
      if (e.open) seqs.back().open_from = s.table->num_tokens() + e.offset;
    }
    if (rope_pos) {
      for (uint32_t j = 0; j < n; ++j)
        for (uint32_t c = 0; c < 3; ++c)
          rope_pos[3 * (t + j) + c] =
              s.rope_positions.empty() ? s.table->num_tokens() + j : s.rope_positions[3 * j + c];
    }
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t tok = s.tokens[j];
      if (!s.embeddings.empty() && in_span(s, j)) {
        ids[t + j] = 0;  // a valid row to look up; inject_rows overwrites it (Gemma 4's
                         // per-layer inputs keep id 0's row, the padding token's, as llama.cpp)
        continue;
      }
      if (tok < 0 || static_cast<uint32_t>(tok) >= spec.n_vocab) {
        for (auto& b : batch) b.table->trim_reserved();
        throw std::invalid_argument("token id " + std::to_string(tok) +
                                    " is outside the vocabulary");
      }
      ids[t + j] = static_cast<uint32_t>(tok);
    }
    if (s.logits == LogitsWanted::All) {
      for (uint32_t j = 0; j < n; ++j) sel[r++] = t + j;
    } else if (s.logits == LogitsWanted::Last) {
      sel[r++] = t + n - 1;
    }
    if (s.logits != LogitsWanted::None) last_row[i] = r - 1;
    t += n;
  }

  const kv::BatchMeta meta = kv::build_batch_meta(seqs, options_.block_size);
  StepOutputs out;
  out.hidden = R > 0 && (hidden || wanted == Rows::greedy_and_hidden);
  out.logits = R > 0 && wanted == Rows::logits;
  out.greedy = R > 0 && !hidden;
  out.token_hidden = options_.token_hidden && !hidden;
  const StepKey key{T, meta.n_seqs, meta.max_q_len, meta.max_kv_len, R, out, injected};
  if (injected) {
    try {
      B.set_injected_rows(injected_rows);
    } catch (...) {
      for (auto& b : batch) b.table->trim_reserved();
      throw;
    }
  }
  if (B.take_ahead(meta, key)) {
    ++steps_ahead_;
  } else {
    B.begin_step(meta);
    forward_->step(B, {.n_tokens = T,
                       .n_rows = R,
                       .hidden = hidden,
                       .injected = injected,
                       .token_hidden = out.token_hidden});
  }
  if (!warming_up_) ++steps_;
  B.submit_step(out, R);
  record_next_ahead(batch, key);
  B.wait_step();

  StepResult result;
  result.logits.resize(batch.size());
  result.greedy.assign(batch.size(), -1);
  result.greedy_rows.resize(batch.size());
  if (out.hidden) {
    const float* hs = B.hidden();
    result.hidden.resize(batch.size());
    uint32_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const uint32_t rows = rows_wanted(batch[i]);
      result.hidden[i].assign(hs + uint64_t(row) * spec.n_embd,
                              hs + uint64_t(row + rows) * spec.n_embd);
      row += rows;
    }
  }
  if (out.greedy) {
    const float* lg = B.logits();
    const uint32_t* gr = B.greedy();
    uint32_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const uint32_t rows = rows_wanted(batch[i]);
      if (rows == 0) continue;
      if (out.logits) {
        result.logits[i].assign(lg + uint64_t(row) * spec.n_vocab,
                                lg + uint64_t(row + rows) * spec.n_vocab);
      }
      result.greedy[i] = static_cast<int32_t>(gr[last_row[i]]);
      result.greedy_rows[i].assign(gr + row, gr + row + rows);
      row += rows;
    }
  }
  if (out.token_hidden) {
    const float* th = B.token_hidden();
    result.token_hidden.resize(batch.size());
    uint64_t at = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const uint64_t n = uint64_t(batch[i].tokens.size()) * spec.n_embd;
      result.token_hidden[i].assign(th + at, th + at + n);
      at += n;
    }
  }
  for (auto& s : batch) {
    if (!s.provisional) s.table->commit(s.tokens);
  }
  if (spec.has_recurrent_state()) save_checkpoints(batch);
  return result;
}

void Runner::keep_provisional(std::span<const KeptTokens> kept) {
  if (!spec_->has_recurrent_state()) return;
  std::vector<StateCopy> copies;
  for (const KeptTokens& k : kept) {
    const auto c = std::find_if(captured_.begin(), captured_.end(),
                                [&](const Captured& c) { return c.table == k.table; });
    if (c == captured_.end() && k.n == 1) continue;  // a one-token step: its state is the live one
    if (c == captured_.end() || k.n == 0 || k.n > c->q_len)
      throw std::invalid_argument("Runner::keep_provisional: no such provisional sequence, or " +
                                  std::to_string(k.n) + " tokens outside its step");
    if (k.n < c->q_len)
      copies.push_back({*k.table->state_slot(), c->from + k.n - 1, StateCopy::Kind::keep});
  }
  if (!copies.empty()) backend_->copy_states(copies);
}

std::vector<std::optional<uint32_t>> Runner::save_states(
    std::span<const kv::BlockTable* const> tables) {
  std::vector<std::optional<uint32_t>> saved(tables.size());
  if (!spec_->has_recurrent_state()) return saved;
  std::vector<StateCopy> copies;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (!tables[i]->state_slot()) continue;
    saved[i] = pool_->checkpoints().acquire();
    if (saved[i]) copies.push_back({*tables[i]->state_slot(), *saved[i], StateCopy::Kind::save});
  }
  try {
    backend_->copy_states(copies);
  } catch (...) {
    for (const StateCopy& c : copies) pool_->checkpoints().discard(c.other);
    throw;
  }
  return saved;
}

void Runner::load_saved_states(std::span<const kv::BlockTable* const> tables,
                               std::span<const uint32_t> saved) {
  if (tables.size() != saved.size())
    throw std::invalid_argument("Runner::load_saved_states: a saved state for each table");
  std::vector<StateCopy> copies;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (!tables[i]->state_slot())
      throw std::invalid_argument("Runner::load_saved_states: a table without a state slot");
    copies.push_back({*tables[i]->state_slot(), saved[i], StateCopy::Kind::restore});
  }
  if (!copies.empty()) backend_->copy_states(copies);
}

void Runner::release_saved_states(std::span<const uint32_t> saved) {
  for (uint32_t s : saved) pool_->checkpoints().discard(s);
}

void Runner::restore_states(std::span<SequenceStep> batch) {
  std::vector<StateCopy> copies;
  for (const auto& s : batch) {
    kv::BlockTable& t = *s.table;
    if (t.state_slot() && t.pending_restore()) {
      copies.push_back({*t.state_slot(), *t.pending_restore(), StateCopy::Kind::restore});
    } else if (!t.state_current()) {
      // A table that took its slot after reusing a prefix without a checkpoint has no state
      // for those tokens.
      for (auto& b : batch) b.table->trim_reserved();
      throw std::invalid_argument("Runner::step: " + spec_->arch_name +
                                  " has recurrent layers: a sequence must resume from a state "
                                  "checkpoint or its first token");
    }
  }
  if (copies.empty()) return;
  backend_->copy_states(copies);
  for (auto& s : batch)
    if (s.table->pending_restore()) s.table->restored();
}

void Runner::save_checkpoints(std::span<SequenceStep> batch) {
  std::vector<StateCopy> copies;
  std::vector<std::pair<kv::BlockTable*, bool>> owners;  // with `rolling`
  for (const auto& s : batch) {
    if (s.checkpoint == kv::Checkpoint::none || s.provisional) continue;
    if (auto slot = s.table->begin_checkpoint()) {
      copies.push_back({*s.table->state_slot(), *slot, StateCopy::Kind::save});
      owners.emplace_back(s.table, s.checkpoint == kv::Checkpoint::rolling);
    }
  }
  if (copies.empty()) return;
  try {
    backend_->copy_states(copies);
  } catch (...) {
    for (size_t i = 0; i < copies.size(); ++i) pool_->checkpoints().discard(copies[i].other);
    throw;
  }
  for (size_t i = 0; i < copies.size(); ++i)
    owners[i].first->end_checkpoint(copies[i].other, owners[i].second);
}

void Runner::record_next_ahead(std::span<const SequenceStep> batch, const StepKey& key) {
  // Hidden states are for embedders, which never decode: nothing to expect. A NextN block's
  // steps need their hidden inputs, which only the step itself brings.
  if (warming_up_ || !backend_->records_ahead() || key.n_rows == 0 || key.out.hidden ||
      spec_->nextn_head)
    return;
  // Sequences that deliver logits are generating: next, each decodes one token (a sequence in
  // the middle of its prompt makes the next step something else).
  uint32_t max_kv_len = 0;
  for (const auto& s : batch) {
    const uint64_t kv_len = s.table->num_tokens() + s.tokens.size() + 1;
    if (s.logits == LogitsWanted::None || kv_len > options_.max_context) return;
    max_kv_len = std::max(max_kv_len, static_cast<uint32_t>(kv_len));
  }
  const auto n = static_cast<uint32_t>(batch.size());
  const StepKey next{n, n, 1, max_kv_len, n, key.out, false};
  try {
    backend_->begin_ahead(next);
    forward_->step(*backend_, {.n_tokens = n,
                               .n_rows = n,
                               .hidden = false,
                               .injected = false,
                               .token_hidden = key.out.token_hidden});
    backend_->end_ahead();
  } catch (...) {
    // Only a head start is lost: the next step records itself.
    backend_->drop_ahead();
  }
}

size_t Runner::warm_up() {
  warming_up_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{warming_up_};
  return backend_->warm_up([&] {
    // Dry steps on throwaway tables: their blocks never reach the real pool's prefix cache.
    const uint32_t bs = options_.block_size;
    kv::BlockPool scratch(options_.max_context / bs + 2, backend_->state_layout().n_slots);
    const uint32_t big = std::min(options_.max_batch_tokens, options_.max_context);
    const std::vector<int32_t> zeros(big, 0);
    // A NextN block's steps read a hidden state for each token.
    const std::vector<float> hidden(spec_->nextn_head ? uint64_t(big) * spec_->n_embd : 0, 0.0f);
    auto dry_step = [&](kv::BlockTable& table, uint32_t n, LogitsWanted logits) {
      SequenceStep s{&table, std::span(zeros).first(n), logits};
      if (spec_->nextn_head) s.hidden_in = std::span(hidden).first(uint64_t(n) * spec_->n_embd);
      step(std::span(&s, 1), /*greedy_only=*/true);
    };
    auto fresh_step = [&](uint32_t n) {
      kv::BlockTable table(scratch, bs);
      dry_step(table, n, n <= options_.max_logits_rows ? LogitsWanted::All : LogitsWanted::Last);
    };
    // Query lengths up to 16 pick the attention's rows per workgroup; 1 and 2.. the matvec
    // widths; above matvec_max_batch the GEMM; the logits rows the output product's kernel.
    const uint32_t ratio = std::max(1u, spec_->n_head / std::max(1u, spec_->n_head_kv));
    const uint32_t short_max = std::min(big, std::max(2u, 16 / ratio));
    for (uint32_t n = 1; n <= short_max; ++n) fresh_step(n);
    // The whole batch, the logits rows, and where the products change kernels.
    fresh_step(big);
    fresh_step(std::min(big, options_.max_logits_rows));
    for (uint32_t n : product_kernel_steps(options_.matvec_max_batch)) fresh_step(std::min(big, n));
    // Decode after a long context: split-K attention and its reduction.
    kv::BlockTable table(scratch, bs);
    const uint32_t long_context = std::min(options_.max_context - 1, 320u);
    while (table.num_tokens() < long_context)
      dry_step(table, std::min(big, long_context - table.num_tokens()), LogitsWanted::None);
    dry_step(table, 1, LogitsWanted::Last);
  });
}

std::vector<std::pair<std::string, double>> Runner::last_step_timings() const {
  return backend_->timings();
}

}  // namespace vkllm::runtime
