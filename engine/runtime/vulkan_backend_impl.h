// The Vulkan StepBackend (make_vulkan_backend in vulkan_backend.h is its interface), declared
// here for the files that define it: vulkan_backend.cpp (graph and encoder operations, the
// Runner's side) and vulkan_backend_products.cpp (the weight products, the q8 copies of their
// inputs and their fused decode epilogues). Internal to engine/runtime.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/step_backend.h"
#include "engine/runtime/vulkan_step_buffers.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"
#include "engine/vulkan/row_ops.h"

namespace vkllm::runtime::detail {

class VulkanBackend final : public StepBackend {
 public:
  VulkanBackend(const Model& model, RunnerOptions& o);

  // ---- Graph operations.

  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override;
  void inject_rows(Rows x, uint32_t n) override;
  void add_injected_slice(Rows x, uint32_t n, uint32_t slice) override;

  // The norms feeding decode products write their q8 copy too (no quantize dispatch), those
  // feeding the subgroup-scope tensor-core GEMM their f16 copy (no conversion dispatch).
  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef> feeds) override;

  // The decode kernel (in passes of up to 8 vectors) for small batches, the tiled GEMM above
  // matvec_limit() tokens; int8-dot decode kernels read x's q8 copy, made here unless the norm or
  // activation that wrote x made it.
  void products(Rows x, uint32_t n, std::span<const ProductOut> outs) override;

  // On the GEMMs, a split-K product's reduction pass normalizes the rows it sums (the last of
  // each token's workgroups: one dispatch and barrier fewer; the norm summing the ~16 partials
  // itself, one workgroup a row, took longer than the pass). At decode sizes the norm may be left
  // to the next product, which reads its input through it (can_leave_norm). The norm fused into
  // the product's last workgroup lost (bench/RESULTS.md) and is gone.
  void products_then_norm(Rows in, uint32_t n, const ProductOut& out,
                          const NormAfter& norm) override;

  // On the GEMMs a split-K gate|up product leaves its partials to the GLU, which sums them. (The
  // GLU fused into the decode product lost: bench/RESULTS.md.)
  void products_then_glu(Rows x, uint32_t n, std::span<const ProductOut> outs,
                         const GluAfter& glu) override;

  // With opt.fused_rope_kv, decode's Q|K|V products (stacked, or Q, K and V apart; int8-dot or
  // float-activation matvecs) rotate Q and K and write K and V into the cache themselves
  // (MatmulKernels::record_matvec_rope_kv): the RoPE/KV-write dispatches and their barrier go
  // away. On the GEMMs a stacked Q|K|V product's split-K partials go to RoPE and the cache
  // writes unsummed (no reduction dispatch and barrier).
  void products_then_rope_kv(Rows x, uint32_t n, std::span<const ProductOut> outs,
                             const RopeKvAfter& r) override;

  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override;
  void add(Rows a, Rows b, Rows out, uint64_t n) override;
  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override;
  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override;
  void norm_rope_kv(const NormRopeKv& s) override;
  void attention(const AttentionSpec& s) override;

  // With a q8 or f16 copy for the products that read `out` next (FFN down).
  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef> feeds) override;

  // The router's product into Up, routing on the device (shaders/moe_route.comp), then the
  // selected experts' gate and up products into Gate and Up as n_tokens * n_used rows, the GLU
  // into FfnAct, and the down products summed with the router's weights into the residual.
  // Small steps: indirect matvecs (MatmulKernels::record_moe_matvec), each pair reading its
  // expert's rows. Larger ones: the pairs grouped by expert on the device (ops::moe_group), the
  // grouped products (MatmulKernels::record_moe_matmul: on the decode kernel, each expert's rows
  // read once per 8 of its pairs, or from more pairs on the GEMMs, once per tile of its pairs),
  // the down products per pair into moe_pair_out and summed by ops::moe_combine. Never an
  // unselected expert.
  void moe_ffn(const MoeSpec& m, uint32_t n_tokens) override;
  enum class MoeWay { Matvec, GroupedMatvec, GroupedGemm };
  uint64_t moe_grouped_ffns() const override {
    return moe_ffns_[static_cast<size_t>(MoeWay::GroupedGemm)];
  }
  uint64_t moe_grouped_matvec_ffns() const override {
    return moe_ffns_[static_cast<size_t>(MoeWay::GroupedMatvec)];
  }
  uint64_t moe_int8_ffns() const override { return moe_int8_ffns_; }
  // How a step of n_tokens runs moe_ffn (the thresholds in vulkan_backend_moe.cpp).
  MoeWay moe_way(uint32_t n_expert, uint32_t n_used, uint32_t n_tokens) const;
  // Whether expert products of `w` (the up (and gate) products, or the down ones) over T tokens
  // take the indirect matvec on q8 copies of their inputs, `cols` wide: int8-dot kernels for
  // the type, the matvec way, and room for the copy (T rows, or T x n_used pairs for down).
  bool experts_read_q8(const DeviceTensor& w, bool down, uint32_t cols, uint32_t T) const;
  // moe_ffn's ways from the routed ids on (gate, up, GLU, down and combine); `matvec`: the
  // grouped products on the decode kernel.
  void moe_experts_matvec(const MoeSpec& m, uint32_t n_tokens);
  void moe_experts_grouped(const MoeSpec& m, uint32_t n_tokens, bool matvec);
  // Layer l's gate|up experts where the model fused them (weight_fusion.h), else its up ones:
  // what the up products' type and q8 choice are read from.
  const DeviceTensor& moe_up_experts(uint32_t layer) const;
  // The gate and up products of a MoE layer: the fused one (2 x n_ff rows into Up), or up
  // (into Up) and, for gated experts, gate (into Gate).
  struct ExpertProduct {
    const DeviceTensor* w;
    Act out;
    uint32_t rows;
  };
  std::vector<ExpertProduct> moe_gate_up_products(const MoeSpec& m) const;
  // The expert biases of gate and up (gpt-oss), then the GLU into FfnAct (from the fused
  // product's halves where it ran), barriers around.
  void moe_gate_up_bias_glu(const MoeSpec& m, uint32_t n_tokens);
  // The down experts' biases weighted into the residual (gpt-oss), after a barrier.
  void moe_down_bias(const MoeSpec& m, uint32_t n_tokens);
  // At construction: a MoE model this backend cannot run (too many experts for the routing
  // kernel, an expert type without a kernel, an expert tensor past one binding) fails to load
  // with a std::runtime_error naming the reason, not at its first step.
  void check_moe_weights() const;
  // Likewise for attention the device cannot run (vk::ops::attention_unsupported: Gemma 4's heads
  // of 512 at a GQA ratio of 8 want more shared memory than some devices have).
  void check_attention_shapes() const;

  void short_conv(const ShortConvSpec& c) override;
  // Qwen3.5's DeltaNet conv, recurrence and gates (vulkan_backend_delta_net.cpp).
  void ssm_conv(const SsmConvSpec& c) override;
  void delta_net(const DeltaNetSpec& d) override;
  void ssm_scan(const SsmScanSpec& c) override;
  void gate_rows(GateAct act, Rows x, Rows gate, uint32_t n, uint32_t rows, bool per_row) override;
  void rms_norm_add(Rows x, WeightRef w, Rows r, Rows y, uint32_t n, uint32_t rows,
                    std::span<const WeightRef> feeds) override;
  void rms_norm_add_norm(Rows x, WeightRef w, Rows r, const WeightRef* scale, const NormAfter& next,
                         uint32_t rows) override;
  void gated_rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows, Rows gate,
                      uint32_t group, std::span<const WeightRef> feeds) override;
  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override;
  void softcap(Rows x, uint64_t n, float cap) override;
  void argmax(Rows logits, uint32_t n, uint32_t rows) override;

  void barrier() override { rec_->barrier(); }

  void begin_layer(uint32_t layer) override;

  // The device starts on the first layers while the host records the rest, in about step_parts
  // parts.
  void end_layer(uint32_t layer) override;

  void mark(const char* phase) override {
    if (marking_) rec_->timestamp(phase);
  }
  void timestamp(const char* phase) override { rec_->timestamp(phase); }

  // ---- Encoder operations.

  bool has(WeightRef w) const override { return find(w) != nullptr; }

  void embed_positions(WeightRef table, Rows out, uint32_t n_tokens) override;

  // The row id goes into an upload buffer slot of its own (the step's rows are few).
  void embed_row(WeightRef table, uint32_t row, Rows out) override;
  void add_row(Rows row, Rows x, uint32_t n, uint32_t rows) override;
  void layer_norm(Rows x, WeightRef w, WeightRef b, Rows y, uint32_t n, uint32_t rows) override;
  void gelu(Rows x, Rows out, uint64_t n) override;
  void tanh(Rows x, Rows out, uint64_t n, float in_scale) override;
  void pool(PoolMode mode, Rows x, uint32_t n, Rows out) override;
  void copy(Rows from, Rows to, uint64_t n) override;

  // ---- Gemma 3n's operations (vulkan_backend_gemma3n.cpp; kernels in engine/vulkan/row_ops.h).
  // Rows go to the kernels as buffer, offset and stride, so AltUp's interleaved streams need no
  // aligned offsets.

  void rms_norm_plain(Rows x, Rows y, uint32_t n, uint32_t rows) override;
  void add_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows, float scale) override;
  void mul_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows) override;
  void mul_weight(Rows x, WeightRef w, Rows out, uint32_t n, uint32_t rows) override;
  void scale_rows(Rows x, uint32_t n, uint32_t rows, float s) override;
  void gaussian_topk(Rows x, uint32_t n, uint32_t rows, float std_mul) override;
  void match_magnitude(Rows ref, Rows x, Rows out, uint32_t n, uint32_t rows) override;
  void altup_predict(Rows streams, Rows coefs, Rows out, uint32_t n, uint32_t n_streams,
                     uint32_t rows) override;
  void altup_correct(Rows pred, Rows active, Rows coefs, Rows out, uint32_t n, uint32_t n_streams,
                     uint32_t i_active, uint32_t rows) override;
  void mean_streams(Rows streams, Rows out, uint32_t n, uint32_t n_streams, uint32_t rows) override;

  // ---- The Runner's side.

  uint32_t max_batch_tokens() const override { return opt_.max_batch_tokens; }
  uint32_t max_logits_rows() const override { return mem_.max_rows; }
  const kv::KvLayout& kv_layout() const override { return mem_.layout; }
  uint64_t kv_bytes() const override {
    return mem_.kv_arena->capacity() + mem_.state_layout.bytes() + mem_.checkpoints.size();
  }
  const kv::StateLayout& state_layout() const override { return mem_.state_layout; }
  uint32_t state_checkpoints() const override { return mem_.n_checkpoints; }
  void copy_states(std::span<const StateCopy> copies) override;
  uint64_t activation_bytes() const override { return mem_.act_bytes; }
  uint32_t* token_ids() override { return reinterpret_cast<uint32_t*>(mem_.ids_in.mapped()); }
  uint32_t* selected_rows() override { return reinterpret_cast<uint32_t*>(mem_.sel_in.mapped()); }
  uint32_t* rope_positions() override {
    if (!mem_.rope_pos_in.handle()) return StepBackend::rope_positions();
    return reinterpret_cast<uint32_t*>(mem_.rope_pos_in.mapped());
  }
  void set_injected_rows(std::span<const InjectedRows> rows) override;

  void begin_step(const kv::BatchMeta& meta) override;
  void end_step(const StepOutputs& out, uint32_t R) override;
  // Two recorders take turns: while one's step runs, the other records the next step ahead.
  bool records_ahead() const override { return opt_.record_ahead.value_or(!ctx_.caps().is_cpu()); }
  void submit_step(const StepOutputs& out, uint32_t R) override;
  void wait_step() override;
  void begin_ahead(const StepKey& key) override;
  void end_ahead() override;
  void drop_ahead() override;
  bool take_ahead(const kv::BatchMeta& meta, const StepKey& key) override;
  // Through the host-visible stage_in / stage_out buffers (VulkanStepBuffers).
  void begin_stage(const kv::BatchMeta& meta, Rows x, const float* data, uint64_t n) override;
  void submit_stage(Rows x, uint64_t n) override;
  const float* wait_stage() override;

  const float* logits() const override {
    return reinterpret_cast<const float*>(mem_.readback.mapped());
  }
  const uint32_t* greedy() const override {
    return reinterpret_cast<const uint32_t*>(mem_.readback.mapped() + mem_.greedy_at());
  }
  const float* hidden() const override {
    return reinterpret_cast<const float*>(mem_.readback.mapped());
  }
  const float* token_hidden() const override {
    return reinterpret_cast<const float*>(mem_.token_readback.mapped());
  }

  // Walks the dry steps with a dry CommandRecorder, collecting the pipelines they ask for, then
  // builds them on worker threads and saves the device's pipeline cache.
  size_t warm_up(const std::function<void()>& dry_steps) override;
  std::vector<std::pair<std::string, double>> timings() const override;

 private:
  // Which activation the q8 buffer (xq) holds a copy of (rows of the width its products
  // read).
  struct Q8Copy {
    Act act;
    uint32_t rows;
    vk::BufferSlice q8;
  };

  const DeviceTensor* find(WeightRef w) const {
    return w.w == model::Weight::Output ? &m_.output() : m_.find(w.w, w.layer);
  }
  const DeviceTensor& get(WeightRef w) const {
    return w.w == model::Weight::Output ? m_.output() : m_.get(w.w, w.layer);
  }

  // Rows r of `width` elements (a stride of 0: packed) for the row kernels.
  vk::ops::RowsRef rows_ref(Rows r, uint32_t width) {
    return {mem_.buf(r.act), r.off, r.stride ? r.stride : width};
  }

  // Which activation mem_.x_f16 holds as f16 rows (n rows of its width).
  struct F16Copy {
    Act act;
    uint32_t rows;
  };

  // The q8 copy of x (n rows of cols) for int8-dot products, quantized here unless the kernel
  // that wrote x made it.
  vk::BufferSlice q8_input(Rows x, uint32_t cols, uint32_t n);
  // The q8 copy of x (n packed rows) if the kernel that wrote x made one, else empty.
  vk::BufferSlice q8_copy(Rows x, uint32_t n) const {
    const bool made = q8_of_ && q8_of_->act == x.act && q8_of_->rows == n && x.off == 0;
    return made ? q8_of_->q8 : vk::BufferSlice{};
  }

  // Whether decode products of these weights read `in` (n rows of cols) as q8 blocks.
  // A norm's arguments over `rows` rows of n from x to y (their strides, the model's eps); the
  // caller adds the weight and any fused part (q8 / f16 copy, gate, post-add).
  vk::ops::RmsNormArgs norm_rows(Rows x, Rows y, uint32_t n, uint32_t rows);
  // The copy a norm's output y also writes for the products in `feeds`: q8 rows for int8-dot
  // matvecs, else (y dense) f16 rows for a tensor-core GEMM. record_norm() dispatches the norm
  // and notes the copies as y's.
  void norm_copies(vk::ops::RmsNormArgs& a, Rows y, std::span<const WeightRef> feeds, uint32_t n,
                   uint32_t rows);
  void record_norm(const vk::ops::RmsNormArgs& a, Act y, uint32_t rows);
  bool wants_q8(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const;
  // Whether products of these weights read `in` (n dense rows of cols) as f16 rows: the kernel
  // writing `in` then writes them too where it can (and no q8 copy is wanted).
  bool wants_f16(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const;
  // Whether one stacked Q|K|V product `out` writes r.q, r.k and r.v as its rows in order.
  bool stacked_rows(const ProductOut& out, const RopeKvAfter& r) const;
  // The arguments of product `o` of x (n rows) but the weights': x, y, batch, accumulate, and
  // x's f16 copy where one was written.
  vk::MatmulArgs product_args(Rows x, uint32_t n, const ProductOut& o);
  // The f16 copy's buffer as rows of `cols` halves, for the kernel writing `rows` of them and the
  // GEMM reading them: as many whole rows as the buffer and the device's binding range hold (at
  // least `rows`), so that the workgroup-scope GEMM can load its last token tile unchecked.
  vk::BufferSlice f16_rows(uint32_t rows, uint32_t cols) const;
  // Whether deferred_product records product `o` of n rows.
  bool defers(const ProductOut& o, uint32_t n) const;
  // One product on the GEMM whose split-K partials, if it splits, are left for the kernel after
  // the next barrier to sum (o.accumulate then not applied); splits 0: y was written. Nullopt
  // where the product cannot be deferred (matvec, or weights stored in parts): nothing recorded.
  std::optional<vk::SplitParts> deferred_product(Rows x, uint32_t n, const ProductOut& o);
  // glu(), gate and up read from a deferred product's partials when given (their offsets then
  // rows of that product).
  void glu_rows(GluAct act, Rows gate, Rows up, const vk::SplitParts* parts, Rows out, uint32_t n,
                uint32_t rows, std::span<const WeightRef> feeds);
  // Most tokens a product of weights of `type` takes on the decode kernel: RunnerOptions::
  // matvec_max_batch, or fewer where the GEMM runs those weights on tensor cores.
  uint32_t matvec_limit(const DeviceTensor& w) const;
  vk::ops::RopeParams rope_params(const RopeSpec& r) const;
  // write_kv() from any head rows (a split-K product's partials among them).
  void write_kv_rows(uint32_t layer, bool value, const vk::ops::RopeParams* rope,
                     const vk::ops::HeadRows& src, const vk::ops::HeadNorm* norm = nullptr);

  // Starts recording a step of this shape into the recorder the last submitted step is not in.
  void start_recording(uint32_t n_tokens, uint32_t n_seqs, uint32_t max_q_len, uint32_t max_kv_len,
                       bool ahead);
  // The step's inputs that begin_step() writes (the batch metadata, learned positions).
  void write_inputs(const kv::BatchMeta& meta);
  // The copies that deliver a step's outputs to the host.
  void record_outputs(const StepOutputs& out, uint32_t R);
  vk::CommandRecorder& other(const vk::CommandRecorder* r) {
    return r == recs_[0].get() ? *recs_[1] : *recs_[0];
  }

  // An activation was overwritten: a q8 or f16 copy of it is stale, and so is a norm left to
  // the products that read it, if it is the norm's output or input.
  void wrote(Act a) {
    if (q8_of_ && q8_of_->act == a) q8_of_.reset();
    if (f16_of_ && f16_of_->act == a) f16_of_.reset();
    if (normalized_ && (normalized_->act == a || normalized_->src.act == a)) normalized_.reset();
  }
  // Whether products_then_norm can leave its norm to the products that read the output (float
  // weights on the decode kernel, MatmulKernels::can_read_normalized).
  bool can_leave_norm(const ProductOut& out, const NormAfter& norm, uint32_t n) const;
  // Where x is an RMSNorm left to its readers: a reads its source through the norm instead.
  void read_normalized(Rows x, uint32_t n, vk::MatmulArgs& a);

  vk::Context& ctx_;
  const Model& m_;
  const model::ModelSpec& spec_;
  // First in, last out: the step's memory outlives the recorder whose commands use it.
  VulkanStepBuffers mem_;
  const RunnerOptions& opt_;  // with the limits mem_ lowered
  vk::MatmulKernels matmul_;
  std::array<std::unique_ptr<vk::CommandRecorder>, 2> recs_;
  // copy_states()'s own submissions, apart from the steps' and the one recorded ahead.
  std::unique_ptr<vk::CommandRecorder> state_rec_;
  vk::CommandRecorder* rec_ = nullptr;        // the one being recorded into
  vk::CommandRecorder* submitted_ = nullptr;  // the one holding the last submitted step
  // A step recorded ahead (in the recorder that is not submitted_) and its key; whether one is
  // being recorded, and whether it wrote an input while recording (so it is never taken).
  std::optional<StepKey> ahead_;
  bool recording_ahead_ = false, ahead_broken_ = false;
  uint32_t compute_units_ = 8;
  uint64_t moe_ffns_[3] = {};   // moe_ffn calls recorded each MoeWay (not dry)
  uint64_t moe_int8_ffns_ = 0;  // of the MoeWay::Matvec ones, those on q8 inputs
  bool marking_ = false;        // recording the profiled layer
  uint32_t n_row_ids_ = 0;      // embed_row's ids in this step
  // set_injected_rows: where each span's rows lie in mem_.rows_in (bytes).
  struct InjectedAt {
    uint32_t row = 0, n = 0;
    uint64_t offset = 0;
  };
  std::vector<InjectedAt> injected_;
  // The step's batch.
  vk::ops::BatchInfo batch_;
  uint32_t max_q_len_ = 0, max_kv_len_ = 0;
  std::optional<Q8Copy> q8_of_;
  std::optional<F16Copy> f16_of_;
  // An RMSNorm not dispatched: `act` (rows of n) is norm(src) with weight w, for the products
  // that read it to compute as they read src.
  struct Normalized {
    Act act;
    Rows src;
    vk::BufferSlice w;
    uint32_t rows;
  };
  std::optional<Normalized> normalized_;
};

}  // namespace vkllm::runtime::detail
