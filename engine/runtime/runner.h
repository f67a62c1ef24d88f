// Runs forward steps of a model over the paged KV cache. A step takes a batch of sequences, each
// with a span of new tokens (a prefill chunk or one decode token) that follow the tokens already
// in its BlockTable, runs the decoder graph (Forward) on a StepBackend (Vulkan: every layer's
// dispatches recorded into one command buffer and submitted once), and returns the logits (or
// greedy tokens) asked for. The Runner only orchestrates: limits, KV block reservation, batch
// metadata, results. Nothing in a step allocates memory: all activation buffers are sized for
// RunnerOptions' limits when the Runner is made.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/kv/block_pool.h"
#include "engine/kv/block_table.h"
#include "engine/kv/kv_cache_type.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/model.h"
#include "engine/vulkan/matmul_ops.h"

namespace vkllm::runtime {

// Where the GEMM runs a weight type on tensor cores, the most tokens a product of it stays on the
// decode (matvec) kernel (VulkanBackend::matvec_limit): K-quants, whose int8-dot decode is cheap,
// and the other types, one pass of 8 vectors.
inline constexpr uint32_t kTensorCoreMatvecMaxBatchKQuant = 12;
inline constexpr uint32_t kTensorCoreMatvecMaxBatch = 8;
// The step sizes at which the products change kernels or token tiles: the first past each
// matvec limit (RunnerOptions::matvec_max_batch, the tensor-core GEMMs' by weight type) and the
// GEMM's batched-decode tiles above 16, 32 and 64 tokens. The warm-ups (Runner's, Encoder's) step
// through each, so no request builds a pipeline.
inline std::array<uint32_t, 6> product_kernel_steps(uint32_t matvec_max_batch) {
  return {kTensorCoreMatvecMaxBatch + 1,
          kTensorCoreMatvecMaxBatchKQuant + 1,
          matvec_max_batch + 1,
          17,
          33,
          65};
}
// F16 weights of long rows leave the matvec after 5 tokens where the workgroup-scope GEMM runs
// them: each matvec workgroup of 2 rows reads all of its vectors (8 x 14336 floats for the 8B
// down projection, past the L1 cache), the GEMM reads each once per 128 rows. On an H100
// (bench/results/HISTORY.md, Nineteenth session) 8B F16 at 8 sequences 838-844 -> 895-900 tok/s, at
// 5 and 6 even; 1B F16's 8192-wide down projection gained nothing (5 sequences 2446-2600 against
// 2718-2721 on the matvec), hence the threshold above it.
inline constexpr uint32_t kF16LongRowCols = 12288;
inline constexpr uint32_t kF16LongRowMatvecMaxBatch = 5;
// So do F16 products of many rows (gate|up, the LM head): there the GEMM streams the weights
// faster than the matvec's 2-row workgroups (8B gate|up 28672 x 4096 at 8 vectors: 2.31 against
// 2.15 TB/s). On an H100 (bench/results/HISTORY.md, Twenty-first session), GPU ms a step at 8
// sequences: 8B F16 8.686-8.687 -> 8.535-8.538, 1B F16 2.025-2.035 -> 1.951-1.960; at 6 even / -3%.
// Q|K|V and the output projection (at most 6144 rows on these models) stay: on the GEMM they lost.
inline constexpr uint32_t kF16WideRows = 16384;

struct RunnerOptions {
  uint32_t block_size = 16;      // tokens per KV block
  uint64_t kv_budget_bytes = 0;  // 0: VKLLM_KV_BUDGET, else a share of device memory
  // Exactly this many KV blocks instead of what the budget holds (0: the budget decides): the
  // stages of a split model share one block pool, so each holds the same blocks.
  uint32_t kv_blocks = 0;
  uint32_t max_batch_tokens = 512;  // new tokens per step, over all sequences
  uint32_t max_seqs = 64;           // sequences per step
  uint32_t max_context = 0;         // per sequence; 0: the model's training context (<= 8192)
  uint32_t max_logits_rows = 0;     // logits rows per step; 0: max_seqs (perplexity needs more)
  // Steps of at most this many tokens multiply weights with the decode (matvec) kernel in passes
  // of 8 vectors, larger ones with the tiled GEMM. Where the GEMM runs on tensor cores the
  // backend switches earlier (VulkanBackend::matvec_limit). Without them, on an H100 the matvec
  // won at 16 sequences (8B Q4_K_M 1105 vs 942 tok/s, 1B 4058 vs 3722), the GEMM from 32.
  uint32_t matvec_max_batch = 16;
  // Gated DeltaNet: a sequence bringing at least this many tokens to a step runs the delta rule
  // in its chunked parallel form (engine/cpu/delta_net.h, shaders/delta_net_chunked.comp), fewer
  // the recurrent form (0: always the recurrent form). Unset: the backend's default,
  // delta_net_chunk_min_for().
  std::optional<uint32_t> delta_net_chunk_min;
  // Encoders: K/V live only for the layer that writes them, so the backend makes one K and one V
  // region of this many blocks that every layer reuses (kv_budget_bytes is then unused).
  uint32_t kv_scratch_blocks = 0;
  // The constructor calls warm_up(), so the first step compiles nothing.
  bool warm_up = true;
  // Decode products of quantized weights on activations quantized to int8 blocks, with integer
  // dot products ("auto": where the device accelerates them; "on"; "off").
  vk::Int8Dot int8_dot = vk::Int8Dot::Auto;
  // Decode (matvec-sized steps, normal RoPE order): the Q|K|V products rotate Q and K and write K
  // and V into the cache themselves. On an H100 it took the layers of an 8B Q4_K_M step from 3.62
  // to 3.41 ms of GPU time, 1B F16 from 1.63 to 1.54 (bench/results/HISTORY.md, Eighth session);
  // Off only in tests (the separate passes remain for the cases the fused kernel does not take).
  bool fused_rope_kv = true;
  // The KV cache's element type (OLLAMA_KV_CACHE_TYPE, read by the server and the CLI: not by
  // from_env): q8_0 / q4_0 need a head dimension that is a multiple of 32.
  kv::CacheType kv_cache_type = kv::CacheType::F16;
  // Hybrid models: the share of the KV budget (after the live recurrent states) that holds
  // state checkpoints, which let a sequence resume from a cached prefix (kv::StateCheckpoints;
  // 0: none, and such a model reuses no prefix).
  double state_checkpoint_share = 0.125;
  // Hybrid models: recurrent states a speculative verification step may keep, one after each
  // drafted token of its provisional sequences (kv::StateLayout's captured states), so that a
  // sequence keeps the state after the tokens it accepts (Runner::keep_provisional). The drafted
  // tokens of one step's provisional sequences must fit. 0: provisional steps keep none (their
  // caller keeps the whole step or puts the state back itself: save_states, a draft model's).
  uint32_t draft_states = 0;
  // Every step also delivers each token's hidden state after the final norm
  // (StepResult::token_hidden): the input a multi-token-prediction head reads (nextn_head.h).
  bool token_hidden = false;
  // A step is submitted in this many parts, so the device runs the first layers while the host
  // records the rest (1: one submission).
  uint32_t step_parts = 8;
  // While a step runs, record the step expected next (each sequence decoding one more token), so
  // that step starts as soon as its inputs are written. Unset: where the device is a GPU (on a
  // CPU device the recording would take the cores its kernels run on).
  std::optional<bool> record_ahead;
  // GPU timestamps around every phase of layer `profile_layer` (last_step_timings), for
  // profiles: models whose layers differ (sliding and global, KV-sharing) profile each kind.
  bool profile = false;
  uint32_t profile_layer = 1;
  // CPU backend: threads of a pool of the Runner's own (0: the process's shared pool of
  // VKLLM_THREADS, else the physical cores) and the kernels' code path (unset: the best the CPU
  // has, capped by VKLLM_CPU_ISA).
  uint32_t cpu_threads = 0;
  std::optional<cpu::Isa> cpu_isa;
  // Mamba-2: a sequence bringing at least this many tokens to a step runs the chunked scan (the
  // state-space-duality form), fewer the recurrence (0: the backend's default,
  // cpu::kMamba2ChunkMinTokens or vk::ops::kSsmChunkMinTokens).
  uint32_t ssm_chunk_min_tokens = 0;
  // Steps may take embedding rows in place of token embeddings (SequenceStep::embeddings: a
  // vision model's images). Vulkan: an upload buffer of max_batch_tokens rows of n_embd floats.
  bool embedding_inputs = false;
};

// The fewest tokens of one sequence in a step that run the chunked delta rule: RunnerOptions::
// delta_net_chunk_min, else the backend's: on the CPU never (its recurrent form is the faster,
// engine/cpu/delta_net.h), on Vulkan from 16 tokens until the H200 says otherwise
// (docs/engine.md).
inline constexpr uint32_t kDeltaNetChunkMinCpu = 0, kDeltaNetChunkMinVulkan = 16;
inline uint32_t delta_net_chunk_min_for(const RunnerOptions& o, bool cpu) {
  return o.delta_net_chunk_min.value_or(cpu ? kDeltaNetChunkMinCpu : kDeltaNetChunkMinVulkan);
}

enum class LogitsWanted { None, Last, All };

// Tokens [offset, offset + n) of a SequenceStep take these rows (n x n_embd floats) in place of
// their token embeddings: an image's embeddings. The tokens there may be any int32 (the
// server puts ids derived from the image's content there, so the prefix cache tells images
// apart); they are never looked up. `open`: the span's tokens attend to each other both ways
// (Gemma 3's images, llama.cpp's causal-off decode of an image); an open span must end the
// step's tokens of its sequence.
struct EmbeddingSpan {
  uint32_t offset = 0;
  uint32_t n = 0;
  const float* rows = nullptr;
  bool open = false;
};

struct SequenceStep {
  kv::BlockTable* table = nullptr;  // the sequence's cache; reserved by step() if needed
  std::span<const int32_t> tokens;  // new tokens, at positions table->num_tokens() onwards
  LogitsWanted logits = LogitsWanted::Last;
  // Speculative verification: the step writes the tokens' K/V but leaves them uncommitted (and
  // out of the prefix cache); the caller commits the accepted prefix with BlockTable::commit()
  // and drops the rest with BlockTable::trim_reserved(), after Runner::keep_provisional() (a
  // hybrid model's recurrent state has taken in every token of the step: it keeps the state
  // after the accepted ones, RunnerOptions::draft_states).
  bool provisional = false;
  // Hybrid models: keep a checkpoint of the state after the step (its tokens must end at a block
  // boundary; skipped when that block has one or the checkpoint pool has no slot to give).
  kv::Checkpoint checkpoint = kv::Checkpoint::none;
  // Embedding rows in place of some tokens' embeddings (images), in offset order, disjoint;
  // needs RunnerOptions::embedding_inputs.
  std::span<const EmbeddingSpan> embeddings{};
  // A NextN block (model::ModelSpec::nextn_head) only, and required there: for each token, the
  // model's hidden state after the final norm at the position before it (n_embd floats a token;
  // needs RunnerOptions::embedding_inputs).
  std::span<const float> hidden_in{};
  // M-RoPE models (Qwen2-VL / 2.5-VL) only: each token's rotary positions (t, h, w), 3 per token,
  // where they differ from its position in the sequence: an image's tokens (one t, h and w
  // from its grid) and every token after an image (which continues from the image's largest
  // position + 1, vision::mrope_positions). Empty: the token's position in the sequence, thrice.
  // The KV slots and the causal mask still follow the sequence positions.
  std::span<const uint32_t> rope_positions{};
};

struct StepResult {
  // Per sequence, in batch order: its requested rows of n_vocab logits, concatenated.
  std::vector<std::vector<float>> logits;
  // Per sequence: the argmax of its last row (computed on the device), or -1 if none asked.
  std::vector<int32_t> greedy;
  // Per sequence: the argmax of each of its requested rows (filled whenever greedy is), e.g. the
  // target's choice after every drafted token of a speculative step.
  std::vector<std::vector<int32_t>> greedy_rows;
  // step_hidden() and step_draft() only: per sequence, its requested rows of hidden states after
  // the final norm (n_embd each), concatenated.
  std::vector<std::vector<float>> hidden;
  // RunnerOptions::token_hidden only: per sequence, every one of its tokens' hidden state after
  // the final norm (n_embd each), in order.
  std::vector<std::vector<float>> token_hidden;
};

// How many of a provisional sequence's tokens the caller keeps (Runner::keep_provisional).
struct KeptTokens {
  const kv::BlockTable* table = nullptr;
  uint32_t n = 0;  // 1 .. the sequence's tokens in the step
};

class Forward;
class HostModel;
class SplitModel;
class StepBackend;
struct StepKey;

class Runner {
 public:
  // On the model's Vulkan device.
  Runner(Model& model, const RunnerOptions& options = {});
  // On the CPU; `model` must outlive the Runner.
  Runner(const HostModel& model, const RunnerOptions& options = {});
  // Across the Vulkan devices of a split model, by layers (engine/runtime/split_backend.h) or by
  // rows (row_split_backend.h; spec() is then a device's share: SplitModel::spec()).
  Runner(SplitModel& model, const RunnerOptions& options = {});
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  const model::ModelSpec& spec() const { return *spec_; }
  uint64_t weight_bytes() const { return weight_bytes_; }
  kv::BlockPool& pool() { return *pool_; }
  const kv::BlockPool& pool() const { return *pool_; }
  uint32_t block_size() const { return options_.block_size; }
  const RunnerOptions& options() const { return options_; }
  uint64_t kv_bytes() const;
  uint64_t device_bytes() const;  // weights + KV + activations
  // The same on each device, in stage order: one entry unless the model is split.
  std::vector<uint64_t> device_bytes_by_device() const;

  // Runs one step. Reserves blocks for the new tokens (throws std::runtime_error when the pool
  // cannot supply them; the caller should preempt and retry), and on success commits the tokens
  // to each table. With greedy_only, only StepResult::greedy is filled (no logits download).
  StepResult step(std::span<SequenceStep> batch, bool greedy_only = false);
  // Like step(), but the requested rows come back as hidden states after the final norm instead
  // of logits (no LM head): decoder models used as embedders (Qwen3-Embedding).
  StepResult step_hidden(std::span<SequenceStep> batch);
  // A NextN block's draft step: like step(batch, greedy_only = true), with StepResult::hidden
  // holding the requested rows' hidden states after the final norm as well (what the next
  // drafted position reads in place of the model's).
  StepResult step_draft(std::span<SequenceStep> batch);
  // After a step with provisional sequences, before the next step: each listed sequence keeps
  // the first `n` of its tokens in that step. Hybrid models: its recurrent state becomes the
  // state after them (kept by the step); other models: nothing to do. Throws
  // std::invalid_argument for a table that was not provisional in the last step or an n outside
  // 1 .. its tokens.
  void keep_provisional(std::span<const KeptTokens> kept);
  // Hybrid models: a copy of each table's recurrent state (in a state-checkpoint slot, taken
  // until release_saved_states), for a caller that runs provisional steps from the same committed
  // state more than once (a draft model drafting ahead): load_saved_states puts the copies back
  // into the tables' live slots. Returns the slots in order, nullopt where the pool had none
  // (the table's state cannot be brought back). Other models: nullopt for each.
  std::vector<std::optional<uint32_t>> save_states(std::span<const kv::BlockTable* const> tables);
  void load_saved_states(std::span<const kv::BlockTable* const> tables,
                         std::span<const uint32_t> saved);
  void release_saved_states(std::span<const uint32_t> saved);

  // Creates every pipeline a step within the options can use: walks the step for each shape
  // that selects different kernels (decode, short prefill chunks, full chunks, split-K attention
  // after a long context) with the backend in its dry mode (Vulkan: a dry CommandRecorder), then
  // the backend builds what was asked for (on worker threads) and saves the device's pipeline
  // cache. Returns how many pipelines were created.
  size_t warm_up();

  // Steps that ran the recording made ahead for them (RunnerOptions::record_ahead), of all steps.
  uint64_t steps_recorded_ahead() const { return steps_ahead_; }
  uint64_t steps() const { return steps_; }
  // MoE FFN layers the backend ran on its grouped expert GEMMs (StepBackend::moe_grouped_ffns).
  uint64_t moe_grouped_ffns() const;
  // Those it ran grouped on its decode kernel (StepBackend::moe_grouped_matvec_ffns).
  uint64_t moe_grouped_matvec_ffns() const;
  // Those it ran per pair on q8 copies of their inputs (StepBackend::moe_int8_ffns).
  uint64_t moe_int8_ffns() const;

  // Time of the last step's phases (GPU timestamps; empty if unsupported).
  std::vector<std::pair<std::string, double>> last_step_timings() const;

 private:
  // What a step returns for its requested rows: logits (and greedy tokens), hidden states
  // instead, or greedy tokens and hidden states (step_draft).
  enum class Rows : uint8_t { logits, greedy, hidden, greedy_and_hidden };
  StepResult run_step(std::span<SequenceStep> batch, Rows rows);
  // While `batch` runs (key: its recording's), records the step where each of its sequences
  // decodes one more token, if the backend records ahead.
  void record_next_ahead(std::span<const SequenceStep> batch, const StepKey& key);
  void start();
  // Hybrid models, before a step: each sequence's state must cover its committed tokens; a
  // sequence resuming from a reused prefix gets its checkpoint copied into its slot.
  void restore_states(std::span<SequenceStep> batch);
  // After a step: the checkpoints its sequences asked for (SequenceStep::checkpoint).
  void save_checkpoints(std::span<SequenceStep> batch);

  // Hybrid models: the provisional sequences of the last step and the states they kept.
  struct Captured {
    const kv::BlockTable* table = nullptr;
    uint32_t from = 0, q_len = 0;  // the state after token t is in slot from + t (t < q_len - 1)
  };
  std::vector<Captured> captured_;

  const model::ModelSpec* spec_;
  uint64_t weight_bytes_ = 0;
  std::vector<uint64_t> stage_weight_bytes_;  // on each device
  RunnerOptions options_;
  std::unique_ptr<StepBackend> backend_;
  std::unique_ptr<Forward> forward_;
  std::unique_ptr<kv::BlockPool> pool_;
  bool warming_up_ = false;  // dry steps: nothing is recorded ahead
  uint64_t steps_ahead_ = 0, steps_ = 0;
};

}  // namespace vkllm::runtime
