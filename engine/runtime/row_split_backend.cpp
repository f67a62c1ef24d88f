#include "engine/runtime/row_split_backend.h"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/runtime/split_backend.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// The LM head's end of the graph, which device 0 runs alone.
bool row_split_head_weight(WeightRef w) {
  return w.w == Weight::Output || w.w == Weight::OutputNorm;
}
bool row_split_head_rows(Rows r) {
  return r.act == Act::XSel || r.act == Act::HSel || r.act == Act::Logits;
}
// A product that adds into the residual stream: each device's is a partial sum.
bool row_split_residual(const ProductOut& out) {
  return out.y.act == Act::X && out.accumulate;
}

class RowSplitBackend final : public StepBackend {
 public:
  RowSplitBackend(const SplitModel& model, std::vector<std::unique_ptr<StepBackend>> shards)
      : spec_(model.spec()),
        shards_(std::move(shards)),
        open_(shards_.size(), false),
        parts_(shards_.size(), nullptr) {
    sum_.resize(size_t{max_batch_tokens()} * spec_.n_embd);
  }

  // ---- Graph operations: on every device, but for the partial sums and the output.

  void set_injected_rows(std::span<const InjectedRows> rows) override {
    for (auto& s : shards_) s->set_injected_rows(rows);
  }
  void inject_rows(Rows x, uint32_t n) override {
    every([&](StepBackend& b) { b.inject_rows(x, n); });
  }
  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override {
    every([&](StepBackend& b) { b.embed(table, out, n_tokens, scale); });
  }
  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef> feeds) override {
    if (row_split_head_weight(w) || row_split_head_rows(y))
      return first().rms_norm(x, w, y, n, rows, feeds);
    every([&](StepBackend& b) { b.rms_norm(x, w, y, n, rows, feeds); });
  }
  void products(Rows x, uint32_t n, std::span<const ProductOut> outs) override {
    if (row_split_head_weight(outs[0].w)) return first().products(x, n, outs);
    if (outs.size() == 1 && row_split_residual(outs[0])) return partial_sums(x, n, outs[0]);
    every([&](StepBackend& b) { b.products(x, n, outs); });
  }
  // The sum, then the norm on every device (unfused: the sum is made on the host in between).
  void products_then_norm(Rows in, uint32_t n, const ProductOut& out,
                          const NormAfter& norm) override {
    if (!row_split_residual(out)) {
      every([&](StepBackend& b) { b.products_then_norm(in, n, out, norm); });
      return;
    }
    partial_sums(in, n, out);
    barrier();
    rms_norm(norm.x, norm.w, norm.y, norm.n, n, norm.feeds);
  }
  void products_then_glu(Rows x, uint32_t n, std::span<const ProductOut> outs,
                         const GluAfter& glu) override {
    every([&](StepBackend& b) { b.products_then_glu(x, n, outs, glu); });
  }
  void products_then_rope_kv(Rows x, uint32_t n, std::span<const ProductOut> outs,
                             const RopeKvAfter& r) override {
    every([&](StepBackend& b) { b.products_then_rope_kv(x, n, outs, r); });
  }
  void norm_rope_kv(const NormRopeKv& s) override {
    every([&](StepBackend& b) { b.norm_rope_kv(s); });
  }
  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override {
    every([&](StepBackend& b) { b.add_bias(bias, x, n, rows); });
  }
  void add(Rows a, Rows b, Rows out, uint64_t n) override {
    every([&](StepBackend& s) { s.add(a, b, out, n); });
  }
  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override {
    every([&](StepBackend& b) { b.rope(rope, x, n_heads); });
  }
  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override {
    every([&](StepBackend& b) { b.write_kv(layer, value, rope, src); });
  }
  void attention(const AttentionSpec& a) override {
    every([&](StepBackend& b) { b.attention(a); });
  }
  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef> feeds) override {
    every([&](StepBackend& b) { b.glu(act, gate, up, out, n, rows, feeds); });
  }
  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override {
    first().select_rows(from, to, n, n_sel);
  }
  void scale_rows(Rows x, uint32_t n, uint32_t rows, float s) override {
    if (row_split_head_rows(x)) return first().scale_rows(x, n, rows, s);
    every([&](StepBackend& b) { b.scale_rows(x, n, rows, s); });
  }
  void softcap(Rows x, uint64_t n, float cap) override { first().softcap(x, n, cap); }
  void argmax(Rows logits, uint32_t n, uint32_t rows) override { first().argmax(logits, n, rows); }
  // Barriers and marks go to the devices with a part of the step open; they read nothing.
  void barrier() override {
    opened([](StepBackend& b) { b.barrier(); });
  }
  void begin_layer(uint32_t layer) override {
    opened([&](StepBackend& b) { b.begin_layer(layer); });
  }
  void end_layer(uint32_t layer) override {
    opened([&](StepBackend& b) { b.end_layer(layer); });
  }
  void mark(const char* phase) override {
    opened([&](StepBackend& b) { b.mark(phase); });
  }
  void timestamp(const char* phase) override {
    opened([&](StepBackend& b) { b.timestamp(phase); });
  }

  // ---- The Runner's side: the inputs to every device, the results from device 0.

  uint32_t max_batch_tokens() const override {
    uint32_t t = UINT32_MAX;
    for (const auto& s : shards_) t = std::min(t, s->max_batch_tokens());
    return t;
  }
  uint32_t max_logits_rows() const override { return shards_.front()->max_logits_rows(); }
  const kv::KvLayout& kv_layout() const override { return shards_.front()->kv_layout(); }
  uint64_t kv_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : shards_) b += s->kv_bytes();
    return b;
  }
  uint64_t activation_bytes() const override {
    uint64_t b = 0;
    for (const auto& s : shards_) b += s->activation_bytes();
    return b;
  }
  std::vector<uint64_t> device_step_bytes() const override {
    std::vector<uint64_t> out;
    for (const auto& s : shards_) out.push_back(s->kv_bytes() + s->activation_bytes());
    return out;
  }
  uint32_t* token_ids() override { return shards_.front()->token_ids(); }
  uint32_t* selected_rows() override { return shards_.front()->selected_rows(); }
  void begin_step(const kv::BatchMeta& meta) override {
    meta_ = meta;
    pending_ = false;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (i > 0) std::copy_n(token_ids(), meta.n_tokens, shards_[i]->token_ids());
      shards_[i]->begin_step(meta);
      open_[i] = true;
    }
  }
  // Every device with a part open runs it (device 0 with the step's outputs), all at once. A
  // partial sum still pending (a step without logits rows) is not needed: the step's K and V are
  // written.
  void end_step(const StepOutputs& out, uint32_t n_rows) override {
    if (!(out == StepOutputs{})) first();
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (open_[i]) shards_[i]->submit_step(i == 0 ? out : StepOutputs{}, i == 0 ? n_rows : 0);
    }
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (open_[i]) shards_[i]->wait_step();
      open_[i] = false;
    }
    pending_ = false;
  }
  const float* logits() const override { return shards_.front()->logits(); }
  const uint32_t* greedy() const override { return shards_.front()->greedy(); }
  const float* hidden() const override { return shards_.front()->hidden(); }

  // Every device in its dry mode at once (each one's warm-up runs the next one's), as the layer
  // split does; each then builds its own pipelines.
  size_t warm_up(const std::function<void()>& dry_steps) override {
    return warm_up_from(0, dry_steps);
  }
  // A step is two parts per layer on each device: no one timeline of phases to report.
  std::vector<std::pair<std::string, double>> timings() const override { return {}; }

 private:
  size_t warm_up_from(size_t i, const std::function<void()>& dry_steps) {
    if (i + 1 == shards_.size()) return shards_[i]->warm_up(dry_steps);
    size_t later = 0;
    const size_t here = shards_[i]->warm_up([&] { later = warm_up_from(i + 1, dry_steps); });
    return here + later;
  }

  // Device i, with a part of the step open: after a sum, a new part starts with it in X.
  StepBackend& part(size_t i) {
    if (!open_[i]) {
      shards_[i]->begin_stage(meta_, {Act::X}, sum_.data(),
                              uint64_t(meta_.n_tokens) * spec_.n_embd);
      open_[i] = true;
    }
    return *shards_[i];
  }
  template <class F>
  void every(F&& f) {
    settle();
    for (size_t i = 0; i < shards_.size(); ++i) f(part(i));
  }
  StepBackend& first() {
    settle();
    return part(0);
  }
  template <class F>
  void opened(F&& f) {
    for (size_t i = 0; i < shards_.size(); ++i)
      if (open_[i]) f(*shards_[i]);
  }

  // Device 0 adds its share of the product into X, the others write theirs to H (free here: the
  // block's normed input was read, the next norm writes it again).
  void partial_sums(Rows x, uint32_t n, const ProductOut& out) {
    settle();
    part(0).products(x, n, std::span(&out, 1));
    ProductOut partial = out;
    partial.y = {Act::H};
    partial.accumulate = false;
    for (size_t i = 1; i < shards_.size(); ++i) part(i).products(x, n, std::span(&partial, 1));
    pending_ = true;
  }
  // The all-reduce of a pending residual product: every device's part of the step runs (all
  // submitted before any is waited for), and X = device 0's X + the others' partials, in device
  // order (the order is fixed, so the result is the same every time).
  void settle() {
    if (!pending_) return;
    pending_ = false;
    const uint64_t n = uint64_t(meta_.n_tokens) * spec_.n_embd;
    for (size_t i = 0; i < shards_.size(); ++i) shards_[i]->submit_stage({i ? Act::H : Act::X}, n);
    for (size_t i = 0; i < shards_.size(); ++i) {
      parts_[i] = shards_[i]->wait_stage();
      open_[i] = false;
    }
    float* sum = sum_.data();
    const float *x = parts_[0], *p = parts_[1];
    for (uint64_t j = 0; j < n; ++j) sum[j] = x[j] + p[j];
    for (size_t i = 2; i < shards_.size(); ++i) {
      p = parts_[i];
      for (uint64_t j = 0; j < n; ++j) sum[j] += p[j];
    }
  }

  const model::ModelSpec& spec_;
  std::vector<std::unique_ptr<StepBackend>> shards_;
  std::vector<bool> open_;           // by device: a part of the step is being recorded
  std::vector<const float*> parts_;  // by device: its X or partial, after a part ran
  std::vector<float> sum_;           // the summed residual stream (T x n_embd)
  kv::BatchMeta meta_;               // the step's, for every part
  bool pending_ = false;             // a residual product's partial sums await their sum
};

}  // namespace

std::unique_ptr<StepBackend> make_row_split_backend(const SplitModel& model, RunnerOptions& opt) {
  const size_t n = model.num_stages();
  std::vector<RunnerOptions> opts(n, opt);
  for (RunnerOptions& o : opts) {
    // Each part of a step (half a layer) is submitted whole; nothing is recorded ahead.
    o.step_parts = 1;
    o.record_ahead = false;
    if (opt.kv_budget_bytes && !opt.kv_blocks) o.kv_budget_bytes = opt.kv_budget_bytes / n;
  }
  auto split = std::make_unique<RowSplitBackend>(model, make_stage_backends(model, opts));
  opt.max_batch_tokens = split->max_batch_tokens();
  opt.max_logits_rows = split->max_logits_rows();
  return split;
}

}  // namespace vkllm::runtime
