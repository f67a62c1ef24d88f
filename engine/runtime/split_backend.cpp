#include "engine/runtime/split_backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/vulkan_backend.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

class SplitBackend final : public StepBackend {
 public:
  SplitBackend(const SplitModel& model, std::vector<std::unique_ptr<StepBackend>> stages)
      : spec_(model.spec()), stages_(std::move(stages)) {
    for (size_t i = 0; i < stages_.size(); ++i) {
      const LayerRange& r = model.stage(i).layers();
      for (uint32_t l = r.first; l < r.end; ++l) stage_of_.push_back(static_cast<uint32_t>(i));
    }
  }

  // ---- Graph operations: each on the stage that owns it.

  // Image rows in place of token embeddings: the first stage looks the tokens up, so it takes
  // them.
  void set_injected_rows(std::span<const InjectedRows> rows) override {
    stages_.front()->set_injected_rows(rows);
  }
  void inject_rows(Rows x, uint32_t n) override { go(0).inject_rows(x, n); }
  // Deepstack's additions follow the first layers, which the first stage holds.
  void add_injected_slice(Rows x, uint32_t n, uint32_t slice) override {
    if (stage_of_.size() < slice || stage_of_[slice - 1] != 0)
      throw std::invalid_argument("deepstack layers beyond a split model's first stage");
    go(0).add_injected_slice(x, n, slice);
  }
  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override {
    on(table).embed(table, out, n_tokens, scale);
  }
  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef> feeds) override {
    on(w).rms_norm(x, w, y, n, rows, feeds);
  }
  void products(Rows x, uint32_t n, std::span<const ProductOut> outs) override {
    on(outs[0].w).products(x, n, outs);
  }
  // The last layer of a stage ends in the product whose sum the next stage's first layer
  // normalizes (chained norms): the product here, the norm there.
  void products_then_norm(Rows in, uint32_t n, const ProductOut& out,
                          const NormAfter& norm) override {
    const uint32_t a = stage(out.w), b = stage(norm.w);
    if (a == b) return go(a).products_then_norm(in, n, out, norm);
    StepBackend& first = go(a);
    first.products(in, n, std::span(&out, 1));
    first.barrier();
    go(b).rms_norm(norm.x, norm.w, norm.y, norm.n, n, norm.feeds);
  }
  void products_then_glu(Rows x, uint32_t n, std::span<const ProductOut> outs,
                         const GluAfter& glu) override {
    on(outs[0].w).products_then_glu(x, n, outs, glu);
  }
  void products_then_rope_kv(Rows x, uint32_t n, std::span<const ProductOut> outs,
                             const RopeKvAfter& r) override {
    go(layer_stage(r.layer)).products_then_rope_kv(x, n, outs, r);
  }
  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override {
    on(bias).add_bias(bias, x, n, rows);
  }
  void add(Rows a, Rows b, Rows out, uint64_t n) override { cur().add(a, b, out, n); }
  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override {
    cur().rope(rope, x, n_heads);
  }
  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override {
    go(layer_stage(layer)).write_kv(layer, value, rope, src);
  }
  void attention(const AttentionSpec& a) override { go(layer_stage(a.layer)).attention(a); }
  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef> feeds) override {
    cur().glu(act, gate, up, out, n, rows, feeds);
  }
  void short_conv(const ShortConvSpec& c) override { go(layer_stage(c.layer)).short_conv(c); }
  // The recurrent layers' operations (Qwen3.5, Mamba-2) and the row operations their blocks use.
  void ssm_conv(const SsmConvSpec& c) override { go(layer_stage(c.layer)).ssm_conv(c); }
  void delta_net(const DeltaNetSpec& d) override { go(layer_stage(d.layer)).delta_net(d); }
  void ssm_scan(const SsmScanSpec& c) override { go(layer_stage(c.layer)).ssm_scan(c); }
  void gate_rows(GateAct act, Rows x, Rows gate, uint32_t n, uint32_t rows, bool per_row) override {
    cur().gate_rows(act, x, gate, n, rows, per_row);
  }
  void rms_norm_add(Rows x, WeightRef w, Rows r, Rows y, uint32_t n, uint32_t rows,
                    std::span<const WeightRef> feeds) override {
    on(w).rms_norm_add(x, w, r, y, n, rows, feeds);
  }
  void gated_rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows, Rows gate,
                      uint32_t group, std::span<const WeightRef> feeds) override {
    on(w).gated_rms_norm(x, w, y, n, rows, gate, group, feeds);
  }
  void rms_norm_plain(Rows x, Rows y, uint32_t n, uint32_t rows) override {
    cur().rms_norm_plain(x, y, n, rows);
  }
  void mul_weight(Rows x, WeightRef w, Rows out, uint32_t n, uint32_t rows) override {
    on(w).mul_weight(x, w, out, n, rows);
  }
  void scale_rows(Rows x, uint32_t n, uint32_t rows, float s) override {
    cur().scale_rows(x, n, rows, s);
  }
  void moe_ffn(const MoeSpec& m, uint32_t n_tokens) override {
    go(layer_stage(m.layer)).moe_ffn(m, n_tokens);
  }
  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override {
    cur().select_rows(from, to, n, n_sel);
  }
  void softcap(Rows x, uint64_t n, float cap) override { cur().softcap(x, n, cap); }
  void argmax(Rows logits, uint32_t n, uint32_t rows) override { cur().argmax(logits, n, rows); }
  void barrier() override { cur().barrier(); }
  void begin_layer(uint32_t layer) override { go(layer_stage(layer)).begin_layer(layer); }
  void end_layer(uint32_t layer) override { cur().end_layer(layer); }
  void mark(const char* phase) override { cur().mark(phase); }
  void timestamp(const char* phase) override { cur().timestamp(phase); }

  // ---- The Runner's side: inputs to the stages that read them, results from the last.

  uint32_t max_batch_tokens() const override {
    uint32_t t = UINT32_MAX;
    for (const auto& s : stages_) t = std::min(t, s->max_batch_tokens());
    return t;
  }
  uint32_t max_logits_rows() const override { return last().max_logits_rows(); }
  const kv::KvLayout& kv_layout() const override { return stages_.front()->kv_layout(); }
  // Each stage holds its own layers' states, for the same slots.
  const kv::StateLayout& state_layout() const override {
    for (const auto& s : stages_)
      if (!s->state_layout().empty()) return s->state_layout();
    return stages_.front()->state_layout();
  }
  // As many as the stage with the fewest (each holds its own layers' part of every checkpoint).
  uint32_t state_checkpoints() const override {
    uint32_t n = UINT32_MAX;
    for (const auto& s : stages_)
      if (!s->state_layout().empty()) n = std::min(n, s->state_checkpoints());
    return n == UINT32_MAX ? 0 : n;
  }
  void copy_states(std::span<const StateCopy> copies) override {
    for (const auto& s : stages_)
      if (!s->state_layout().empty()) s->copy_states(copies);
  }
  uint64_t kv_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : stages_) b += s->kv_bytes();
    return b;
  }
  uint64_t activation_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : stages_) b += s->activation_bytes();
    return b;
  }
  uint32_t* token_ids() override { return stages_.front()->token_ids(); }
  uint32_t* selected_rows() override { return stages_.back()->selected_rows(); }

  // Every stage rotates its own layers' Q and K: each gets the M-RoPE positions.
  uint32_t* rope_positions() override { return stages_.front()->rope_positions(); }
  void begin_step(const kv::BatchMeta& meta) override {
    meta_ = meta;
    cur_ = 0;
    if (spec_.uses_mrope()) {
      const uint32_t* from = stages_.front()->rope_positions();
      for (size_t i = 1; i < stages_.size(); ++i)
        std::copy_n(from, 3ull * meta.n_tokens, stages_[i]->rope_positions());
    }
    stages_.front()->begin_step(meta);
  }
  void end_step(const StepOutputs& out, uint32_t n_rows) override {
    go(static_cast<uint32_t>(stages_.size() - 1)).end_step(out, n_rows);
  }
  std::vector<uint64_t> device_step_bytes() const override {
    std::vector<uint64_t> out;
    for (const auto& s : stages_) out.push_back(s->kv_bytes() + s->activation_bytes());
    return out;
  }
  const float* logits() const override { return last().logits(); }
  const uint32_t* greedy() const override { return last().greedy(); }
  const float* hidden() const override { return last().hidden(); }

  // Every stage in its dry mode at once: each stage's warm-up runs the next one's, the last
  // runs the dry steps; each then builds its own device's pipelines.
  size_t warm_up(const std::function<void()>& dry_steps) override {
    return warm_up_from(0, dry_steps);
  }

  // Each stage's phases, its times after the stages before it (their GPU time summed: the
  // hand-offs between them are not in it).
  std::vector<std::pair<std::string, double>> timings() const override {
    std::vector<std::pair<std::string, double>> out;
    double offset = 0;
    for (size_t i = 0; i < stages_.size(); ++i) {
      const auto t = stages_[i]->timings();
      for (const auto& [label, ms] : t)
        out.emplace_back("stage" + std::to_string(i) + "." + label, offset + ms);
      if (!t.empty()) offset += t.back().second;
    }
    return out;
  }

 private:
  size_t warm_up_from(size_t i, const std::function<void()>& dry_steps) {
    if (i + 1 == stages_.size()) return stages_[i]->warm_up(dry_steps);
    size_t later = 0;
    const size_t here = stages_[i]->warm_up([&] { later = warm_up_from(i + 1, dry_steps); });
    return here + later;
  }

  StepBackend& cur() { return *stages_[cur_]; }
  const StepBackend& last() const { return *stages_.back(); }
  uint32_t layer_stage(uint32_t layer) const {
    if (layer >= stage_of_.size()) throw std::logic_error("layer past the split model's layers");
    return stage_of_[layer];
  }
  // The stage holding a weight: the embeddings' (looked up) with the first, the output norm and
  // head with the last, a layer's with that layer; weights of no layer are on every stage.
  uint32_t stage(WeightRef w) const {
    if (w.w == Weight::TokenEmbd) return 0;
    if (w.w == Weight::Output || w.w == Weight::OutputNorm)
      return static_cast<uint32_t>(stages_.size() - 1);
    if (model::is_per_layer(w.w)) return layer_stage(w.layer);
    return cur_;
  }
  StepBackend& on(WeightRef w) { return go(stage(w)); }
  // Moves the step on to stage `s`: the residual stream leaves the current stage, whose part of
  // the step then runs, and enters s.
  StepBackend& go(uint32_t s) {
    if (s == cur_) return cur();
    if (s < cur_) throw std::logic_error("the split graph went back to an earlier stage");
    const uint64_t n = uint64_t(meta_.n_tokens) * spec_.n_embd;
    const float* x = cur().end_stage({Act::X}, n);
    cur_ = s;
    cur().begin_stage(meta_, {Act::X}, x, n);
    return cur();
  }

  const model::ModelSpec& spec_;
  std::vector<std::unique_ptr<StepBackend>> stages_;
  std::vector<uint32_t> stage_of_;  // by layer
  kv::BatchMeta meta_;              // the step's, for each stage it reaches
  uint32_t cur_ = 0;                // the stage running the graph's operations
};

}  // namespace

std::vector<std::unique_ptr<StepBackend>> make_stage_backends(const SplitModel& model,
                                                              std::vector<RunnerOptions> opts) {
  const size_t n = model.num_stages();
  std::vector<std::unique_ptr<StepBackend>> stages(n);
  auto make = [&](size_t i) {
    stages[i].reset();  // a stage made again frees its memory first
    stages[i] = make_vulkan_backend(model.stage(i), opts[i]);
  };
  for (size_t i = 0; i < n; ++i) make(i);
  uint32_t blocks = UINT32_MAX;
  for (const auto& s : stages) blocks = std::min(blocks, s->kv_layout().num_blocks);
  for (size_t i = 0; i < n; ++i) {
    if (stages[i]->kv_layout().num_blocks == blocks) continue;
    opts[i].kv_blocks = blocks;
    make(i);
  }
  for (const auto& s : stages) {
    if (s->kv_layout().num_blocks != blocks)
      throw std::runtime_error("the devices of a split model cannot hold the same KV blocks");
  }
  return stages;
}

std::unique_ptr<StepBackend> make_split_backend(const SplitModel& model, RunnerOptions& opt) {
  const auto& spec = model.spec();
  std::vector<RunnerOptions> opts(model.num_stages(), opt);
  for (size_t i = 0; i < opts.size(); ++i) {
    const LayerRange& r = model.stage(i).layers();
    if (opt.kv_budget_bytes && !opt.kv_blocks)
      opts[i].kv_budget_bytes = opt.kv_budget_bytes * (r.end - r.first) / spec.n_layer;
  }
  auto split = std::make_unique<SplitBackend>(model, make_stage_backends(model, std::move(opts)));
  opt.max_batch_tokens = split->max_batch_tokens();
  opt.max_logits_rows = split->max_logits_rows();
  return split;
}

}  // namespace vkllm::runtime
