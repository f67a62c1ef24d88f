#include "engine/runtime/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "engine/cpu/attention.h"
#include "engine/cpu/isa.h"
#include "engine/cpu/mamba2_scan.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/quant_matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/gguf/tensor_type.h"
#include "engine/runtime/cpu_cache_memory.h"
#include "engine/runtime/cpu_gemma3n.h"
#include "engine/runtime/cpu_moe.h"
#include "engine/runtime/cpu_recurrent.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// The process's default pool (VKLLM_THREADS, else the physical cores): every CPU Runner without
// its own thread count shares it, so several loaded models never run more threads than cores
// (the pool runs one loop at a time; callers on other engine threads take turns).
cpu::ThreadPool& shared_pool() {
  static cpu::ThreadPool pool;
  return pool;
}

class CpuBackend final : public StepBackend {
 public:
  CpuBackend(const HostModel& model, RunnerOptions& o)
      : m_(model),
        spec_(model.spec()),
        opt_(o),
        isa_(o.cpu_isa ? cpu::usable_isa(*o.cpu_isa) : cpu::selected_isa()),
        own_pool_(o.cpu_threads ? std::make_unique<cpu::ThreadPool>(o.cpu_threads) : nullptr),
        pool_(own_pool_ ? *own_pool_ : shared_pool()),
        cache_(spec_, opt_) {
    ws_.reserve_threads(pool_.size());
    if (spec_.is_moe()) check_cpu_moe_weights(model);
    allocate_activations();
  }

  // ---- Graph operations: each runs now, its rows shared out over the pool.

  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override {
    cpu::GetRowsArgs g = rows_of(table, out);
    g.ids = ids_.get();
    g.scale = scale;
    split(n_tokens, 1, [&](uint32_t b, uint32_t e) { cpu::get_rows(g, b, e); });
  }

  // Slice 0 of the injected rows copied into x's rows, a deepstack slice added to them.
  void inject_rows(Rows x, uint32_t n) override { injected_slice(x, n, 0); }
  void add_injected_slice(Rows x, uint32_t n, uint32_t slice) override {
    injected_slice(x, n, slice);
  }
  void injected_slice(Rows x, uint32_t n, uint32_t slice) {
    const uint32_t stride = x.stride ? x.stride : n;
    for (const InjectedRows& r : injected_)
      for (uint32_t i = 0; i < r.n; ++i) {
        float* to = ptr(x) + uint64_t(r.row + i) * stride;
        const float* from = r.data + uint64_t(i) * spec_.n_embd_inp() + uint64_t(slice) * n;
        for (uint32_t j = 0; j < n; ++j) to[j] = slice ? to[j] + from[j] : from[j];
      }
  }

  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef>) override {
    cpu::RmsNormArgs a;
    a.x = ptr(x);
    a.weight = f32_weight(w);
    a.y = ptr(y);
    a.n = n;
    a.x_stride = x.stride;
    a.y_stride = y.stride;
    a.eps = spec_.norm_eps;
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) { cpu::rms_norm(a, b, e, isa_); });
  }

  void products(Rows x, uint32_t n, std::span<const ProductOut> outs) override {
    if (outs.empty() || outs.size() > kMaxProducts)
      throw std::logic_error("products: 1 to 4 outputs");
    cpu::WeightView views[kMaxProducts];
    cpu::Product products[kMaxProducts];
    for (size_t i = 0; i < outs.size(); ++i) {
      const HostTensor& w = get(outs[i].w);
      const std::byte* data = w.data;
      if (outs[i].w.slice > 0) {  // matrix `slice` of a stack ([cols, rows, n])
        if (w.shape.size() != 3 || outs[i].w.slice >= w.shape[2])
          throw std::logic_error(w.name + ": no such matrix in the stack");
        data += outs[i].w.slice * w.rows() * gguf::row_bytes(w.type, w.cols());
      }
      views[i] = {w.type, data, w.cols(), w.rows()};
      products[i] = {&views[i], ptr(outs[i].y), outs[i].y.stride ? outs[i].y.stride : w.rows(),
                     outs[i].accumulate};
    }
    const uint64_t x_stride = x.stride ? x.stride : views[0].cols;
    cpu::matmul(std::span<const cpu::Product>(products, outs.size()), ptr(x), x_stride, n, pool_,
                ws_, isa_);
  }

  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override {
    const HostTensor* b = find(bias);
    if (!b) return;
    const float* bp = f32_weight(bias);
    float* xp = ptr(x);
    split(rows, rows_per_task(n),
          [&](uint32_t rb, uint32_t re) { cpu::add_bias(xp, bp, n, x.stride, rb, re, isa_); });
  }

  void add(Rows a, Rows b, Rows out, uint64_t n) override {
    const float *ap = ptr(a), *bp = ptr(b);
    float* op = ptr(out);
    split(static_cast<uint32_t>(n), kElementsPerTask,
          [&](uint32_t i, uint32_t e) { cpu::add(ap, bp, op, i, e, isa_); });
  }

  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override {
    const cpu::RopeParams p = rope_params(rope);
    const cpu::HeadRows rows{ptr(x), x.stride};
    split(batch_.n_tokens, 1,
          [&](uint32_t b, uint32_t e) { cpu::rope(p, batch_, rows, rows, n_heads, b, e, isa_); });
  }

  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override {
    cpu::RopeParams p;
    if (rope) p = rope_params(*rope);
    // Layers may differ in head size and count (Gemma 4): each reads its region as its own.
    const cpu::CacheRegion region{region_data(layer, value), spec_.n_head_kv_of(layer),
                                  cache_.layout.block_size, cache_.layout.type};
    const cpu::ConstHeadRows rows(ptr(src), src.stride);
    const uint32_t head_dim = spec_.head_dim_of(layer);
    split(batch_.n_tokens, 1, [&](uint32_t b, uint32_t e) {
      cpu::write_kv(rope ? &p : nullptr, batch_, rows, head_dim, region, b, e, isa_);
    });
  }

  void attention(const AttentionSpec& s) override {
    cpu::AttentionArgs a;
    a.q = cpu::ConstHeadRows(ptr(s.q), s.q.stride);
    a.k_cache = region_data(s.layer, false);
    a.v_cache = region_data(s.layer, true);
    a.n_kv_heads = spec_.n_head_kv_of(s.layer);
    a.block_size = cache_.layout.block_size;
    a.cache_type = cache_.layout.type;
    a.batch = batch_;
    a.out = {ptr(s.out), s.out.stride};
    a.n_q_heads = s.n_q_heads;
    a.head_dim = s.head_dim;
    a.scale = s.scale;
    a.softcap = s.softcap;
    a.window = s.window;
    a.chunk = s.chunk;
    a.causal = s.causal;
    a.open_span = s.open_span;
    if (s.sinks) a.sinks = f32_weight({Weight::AttnSinks, s.layer});
    a.kv_splits = cpu::attention_suggested_splits(a, max_kv_len_, pool_.size());
    if (a.kv_splits > 1) {
      const uint64_t floats = cpu::attention_partials_floats(a);
      if (partials_.size() < floats) partials_.resize(floats);
      a.partials = partials_.data();
    }
    const uint32_t units = cpu::attention_work_units(a);
    pool_.parallel_for(units, [&](uint32_t u, unsigned) { cpu::attention(a, u, u + 1, isa_); });
    if (a.kv_splits > 1)
      split(batch_.n_tokens, 1, [&](uint32_t b, uint32_t e) { cpu::attention_reduce(a, b, e); });
  }

  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef>) override {
    cpu::GluArgs g;
    g.gate = ptr(gate);
    g.up = ptr(up);
    g.out = ptr(out);
    g.n = n;
    if (act == GluAct::SwigluOai) throw std::logic_error("the clamped SwiGLU is MoE-only here");
    g.act = act == GluAct::Silu ? cpu::GluActivation::Silu : cpu::GluActivation::GeluTanh;
    g.gate_stride = gate.stride;
    g.up_stride = up.stride;
    g.out_stride = out.stride;
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) { cpu::glu(g, b, e, isa_); });
  }

  void moe_ffn(const MoeSpec& m, uint32_t n_tokens) override {
    CpuMoeWeights w{&get({Weight::FfnGateInp, m.layer}),
                    m.gated ? &get({Weight::FfnGateExps, m.layer}) : nullptr,
                    &get({Weight::FfnUpExps, m.layer}), &get({Weight::FfnDownExps, m.layer})};
    if (m.select_bias) w.select_bias = f32_weight({Weight::FfnExpProbsBias, m.layer});
    if (m.biases) {
      w.router_bias = f32_weight({Weight::FfnGateInpBias, m.layer});
      w.gate_bias = f32_weight({Weight::FfnGateExpsBias, m.layer});
      w.up_bias = f32_weight({Weight::FfnUpExpsBias, m.layer});
      w.down_bias = f32_weight({Weight::FfnDownExpsBias, m.layer});
    }
    if (m.router_own_input) {
      w.router_x = ptr(m.router_x);
      w.router_x_stride = m.router_x.stride;
    }
    if (m.down_scales) w.down_scale = f32_weight({Weight::FfnDownExpsScale, m.layer});
    cpu_moe_ffn(m, n_tokens, w, ptr(m.x), m.x.stride, ptr(m.out), m.out.stride, moe_, pool_, ws_,
                isa_);
  }

  // ---- Recurrent layers (cpu_recurrent.h): LFM2's short convolution, Qwen3.5's DeltaNet.
  void short_conv(const ShortConvSpec& c) override {
    cpu_short_conv(c, seq_rows(c.bcx, 3 * c.n_embd), seq_rows(c.out, c.n_embd),
                   f32_weight({Weight::ShortConvConv, c.layer}), step_states(), pool_);
  }
  void ssm_conv(const SsmConvSpec& c) override {
    cpu_ssm_conv(c, seq_rows(c.x, c.channels), seq_rows(c.out, c.channels),
                 f32_weight({Weight::SsmConv1d, c.layer}),
                 c.bias ? f32_weight({Weight::SsmConv1dBias, c.layer}) : nullptr, step_states(),
                 pool_);
  }
  void ssm_scan(const SsmScanSpec& c) override {
    const uint32_t di = c.n_head * c.head_dim;
    const uint32_t chunk_from =
        opt_.ssm_chunk_min_tokens ? opt_.ssm_chunk_min_tokens : cpu::kMamba2ChunkMinTokens;
    cpu_mamba2_scan(c,
                    {seq_rows(c.xbc, di + 2 * c.n_group * c.d_state), seq_rows(c.dt, c.n_head),
                     seq_rows(c.out, di)},
                    f32_weight({Weight::SsmDt, c.layer}), f32_weight({Weight::SsmA, c.layer}),
                    f32_weight({Weight::SsmD, c.layer}), step_states(), pool_, chunk_from);
  }
  void delta_net(const DeltaNetSpec& d) override {
    const uint32_t vd = d.n_v_heads * d.head_dim, qkv = 2 * d.n_k_heads * d.head_dim + vd;
    cpu_delta_net(d,
                  {seq_rows(d.qkv, qkv), seq_rows(d.alpha, d.n_v_heads),
                   seq_rows(d.beta, d.n_v_heads), seq_rows(d.out, vd)},
                  f32_weight({Weight::SsmDt, d.layer}), f32_weight({Weight::SsmA, d.layer}),
                  step_states(), pool_, delta_net_chunk_min_for(opt_, true));
  }
  void gate_rows(GateAct act, Rows x, Rows gate, uint32_t n, uint32_t rows, bool per_row) override {
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) {
      const cpu::GateKind k = act == GateAct::Sigmoid ? cpu::GateKind::Sigmoid
                              : act == GateAct::Silu  ? cpu::GateKind::Silu
                                                      : cpu::GateKind::Relu;
      cpu::gate_rows(k, seq_rows(x, n), seq_rows(gate, per_row ? 1 : n), n, b, e, per_row);
    });
  }

  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override {
    const float* src = ptr(from);
    float* dst = ptr(to);
    const uint32_t from_stride = from.stride ? from.stride : n;
    const uint32_t to_stride = to.stride ? to.stride : n;
    for (uint32_t r = 0; r < n_sel; ++r) {
      const uint32_t row = sel_[r];
      if (row >= batch_.n_tokens) throw std::logic_error("selected row outside the step");
      std::memcpy(dst + uint64_t(r) * to_stride, src + uint64_t(row) * from_stride, 4ull * n);
    }
  }

  void softcap(Rows x, uint64_t n, float cap) override {
    float* p = ptr(x);
    split(static_cast<uint32_t>(n), kElementsPerTask,
          [&](uint32_t b, uint32_t e) { cpu::softcap(p, p, cap, b, e, isa_); });
  }

  void argmax(Rows logits, uint32_t n, uint32_t rows) override {
    const float* p = ptr(logits);
    split(rows, 1, [&](uint32_t b, uint32_t e) {
      cpu::argmax(p, n, logits.stride, greedy_.get(), b, e, isa_);
    });
  }

  // ---- Encoder operations.

  bool has(WeightRef w) const override { return find(w) != nullptr; }

  void embed_positions(WeightRef table, Rows out, uint32_t n_tokens) override {
    cpu::GetRowsArgs g = rows_of(table, out);
    g.ids = meta_.data() + batch_.n_tokens;  // the metadata's token_pos words
    split(n_tokens, 1, [&](uint32_t b, uint32_t e) { cpu::get_rows(g, b, e); });
  }

  void embed_row(WeightRef table, uint32_t row, Rows out) override {
    cpu::GetRowsArgs g = rows_of(table, out);
    g.ids = &row;
    cpu::get_rows(g, 0, 1);
  }

  void add_row(Rows row, Rows x, uint32_t n, uint32_t rows) override {
    const float* rp = ptr(row);
    float* xp = ptr(x);
    split(rows, rows_per_task(n),
          [&](uint32_t rb, uint32_t re) { cpu::add_bias(xp, rp, n, x.stride, rb, re, isa_); });
  }

  void layer_norm(Rows x, WeightRef w, WeightRef b, Rows y, uint32_t n, uint32_t rows) override {
    cpu::LayerNormArgs a;
    a.x = ptr(x);
    a.weight = f32_weight(w);
    a.bias = f32_weight(b);
    a.y = ptr(y);
    a.n = n;
    a.eps = spec_.norm_eps;
    split(rows, rows_per_task(n), [&](uint32_t rb, uint32_t re) { cpu::layer_norm(a, rb, re); });
  }

  void gelu(Rows x, Rows out, uint64_t n) override {
    const float* xp = ptr(x);
    float* op = ptr(out);
    split(static_cast<uint32_t>(n), kElementsPerTask,
          [&](uint32_t b, uint32_t e) { cpu::gelu(xp, op, b, e, isa_); });
  }

  // tanh(s x) = 1 * tanh(s x / 1): the soft-capping kernel with a cap of one, after the scale.
  void tanh(Rows x, Rows out, uint64_t n, float in_scale) override {
    const float* xp = ptr(x);
    float* op = ptr(out);
    split(static_cast<uint32_t>(n), kElementsPerTask, [&](uint32_t b, uint32_t e) {
      if (in_scale != 1.0f) {
        for (uint32_t i = b; i < e; ++i) op[i] = xp[i] * in_scale;
        cpu::softcap(op, op, 1.0f, b, e, isa_);
      } else {
        cpu::softcap(xp, op, 1.0f, b, e, isa_);
      }
    });
  }

  void pool(PoolMode mode, Rows x, uint32_t n, Rows out) override {
    const cpu::PoolMode m = mode == PoolMode::Mean    ? cpu::PoolMode::Mean
                            : mode == PoolMode::First ? cpu::PoolMode::First
                                                      : cpu::PoolMode::Last;
    const float* xp = ptr(x);
    float* op = ptr(out);
    split(batch_.n_seqs, 1,
          [&](uint32_t b, uint32_t e) { cpu::pool_rows(m, batch_, xp, n, op, b, e); });
  }

  void copy(Rows from, Rows to, uint64_t n) override { std::memcpy(ptr(to), ptr(from), 4 * n); }

  // ---- Gemma 3n's operations (cpu_gemma3n.h).

  void rms_norm_plain(Rows x, Rows y, uint32_t n, uint32_t rows) override {
    const float eps = spec_.norm_eps;
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::rms_norm_plain(rp(x, n), rp(y, n), n, eps, b, e);
    });
  }
  void add_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows, float scale) override {
    split(rows, rows_per_task(n), [&](uint32_t rb, uint32_t re) {
      cpu_gemma3n::add_rows(rp(a, n), rp(b, n), rp(out, n), n, scale, rb, re);
    });
  }
  void mul_rows(Rows a, Rows b, Rows out, uint32_t n, uint32_t rows) override {
    split(rows, rows_per_task(n), [&](uint32_t rb, uint32_t re) {
      cpu_gemma3n::mul_rows(rp(a, n), rp(b, n), rp(out, n), n, rb, re);
    });
  }
  void mul_weight(Rows x, WeightRef w, Rows out, uint32_t n, uint32_t rows) override {
    const float* wp = f32_weight(w);
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::mul_weight(rp(x, n), wp, rp(out, n), n, b, e);
    });
  }
  void scale_rows(Rows x, uint32_t n, uint32_t rows, float s) override {
    split(rows, rows_per_task(n),
          [&](uint32_t b, uint32_t e) { cpu_gemma3n::scale_rows(rp(x, n), n, s, b, e); });
  }
  void gaussian_topk(Rows x, uint32_t n, uint32_t rows, float std_mul) override {
    split(rows, rows_per_task(n),
          [&](uint32_t b, uint32_t e) { cpu_gemma3n::gaussian_topk(rp(x, n), n, std_mul, b, e); });
  }
  void match_magnitude(Rows ref, Rows x, Rows out, uint32_t n, uint32_t rows) override {
    split(rows, rows_per_task(n), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::match_magnitude(rp(ref, n), rp(x, n), rp(out, n), n, b, e);
    });
  }
  void altup_predict(Rows s, Rows coefs, Rows out, uint32_t n, uint32_t k, uint32_t rows) override {
    split(rows, rows_per_task(n * k), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::altup_predict(rp(s, n * k), rp(coefs, k * k), rp(out, n * k), n, k, b, e);
    });
  }
  void altup_correct(Rows pred, Rows active, Rows coefs, Rows out, uint32_t n, uint32_t k,
                     uint32_t i_active, uint32_t rows) override {
    split(rows, rows_per_task(n * k), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::altup_correct(rp(pred, n * k), rp(active, n), rp(coefs, k), rp(out, n * k), n, k,
                                 i_active, b, e);
    });
  }
  void mean_streams(Rows s, Rows out, uint32_t n, uint32_t k, uint32_t rows) override {
    split(rows, rows_per_task(n * k), [&](uint32_t b, uint32_t e) {
      cpu_gemma3n::mean_streams(rp(s, n * k), rp(out, n), n, k, b, e);
    });
  }

  void barrier() override {}
  void begin_layer(uint32_t layer) override {
    marking_ = opt_.profile && layer == opt_.profile_layer;
    mark("layer_begin");
  }
  void end_layer(uint32_t) override { marking_ = false; }
  void mark(const char* phase) override {
    if (marking_) timestamp(phase);
  }
  void timestamp(const char* phase) override {
    if (opt_.profile) marks_.emplace_back(phase, std::chrono::steady_clock::now());
  }

  // ---- The Runner's side.

  uint32_t max_batch_tokens() const override { return opt_.max_batch_tokens; }
  uint32_t max_logits_rows() const override { return opt_.max_logits_rows; }
  const kv::KvLayout& kv_layout() const override { return cache_.layout; }
  uint64_t kv_bytes() const override { return cache_.bytes(); }
  const kv::StateLayout& state_layout() const override { return cache_.states; }
  uint32_t state_checkpoints() const override { return cache_.n_checkpoints; }
  void copy_states(std::span<const StateCopy> copies) override {
    cpu_copy_states(copies, cache_.state_data.get(), cache_.checkpoint_data.get(), cache_.states,
                    cache_.n_checkpoints);
  }
  uint64_t activation_bytes() const override { return act_bytes_; }
  uint32_t* token_ids() override { return ids_.get(); }
  uint32_t* selected_rows() override { return sel_.get(); }
  uint32_t* rope_positions() override {
    if (rope_pos_.empty()) rope_pos_.assign(3ull * opt_.max_batch_tokens, 0);
    return rope_pos_.data();
  }
  // The rows stay where the Runner's caller keeps them until the step ends.
  void set_injected_rows(std::span<const InjectedRows> rows) override {
    injected_.assign(rows.begin(), rows.end());
  }

  void begin_step(const kv::BatchMeta& meta) override {
    meta_ = meta.words;
    batch_ = {std::span<const uint32_t>(meta_), meta.n_tokens, meta.n_seqs};
    max_kv_len_ = meta.max_kv_len;
    marks_.clear();
    timestamp("start");
  }
  void end_step(const StepOutputs& out, uint32_t) override {
    results_ = out.pooled ? Act::Logits : out.token_states ? Act::X : Act::HSel;
    timestamp("output");
  }

  const float* logits() const override { return act(Act::Logits); }
  const uint32_t* greedy() const override { return greedy_.get(); }
  const float* hidden() const override { return act(results_); }
  const float* token_hidden() const override { return act(Act::H); }

  // Nothing to create ahead: the kernels are compiled in.
  size_t warm_up(const std::function<void()>&) override { return 0; }

  std::vector<std::pair<std::string, double>> timings() const override {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [label, at] : marks_) {
      out.emplace_back(
          label, std::chrono::duration<double, std::milli>(at - marks_.front().second).count());
    }
    return out;
  }

 private:
  static constexpr size_t kMaxProducts = 4;
  static constexpr uint32_t kElementsPerTask = 16384;
  static constexpr size_t kActs = size_t(Act::Coef) + 1;

  // Rows per task so a task has at least ~16k elements of work (a loop dispatch costs ~1 us).
  static uint32_t rows_per_task(uint32_t n) { return std::max<uint32_t>(1, kElementsPerTask / n); }

  // Runs f(begin, end) over [0, n) in tasks of at least `grain` units: inline when one task
  // suffices, else about four tasks per thread (dynamic claiming balances the rest).
  template <class F>
  void split(uint32_t n, uint32_t grain, const F& f) {
    if (n == 0) return;
    const uint32_t threads = pool_.size();
    const uint32_t tasks =
        std::min<uint32_t>((n + grain - 1) / grain, threads == 1 ? 1 : threads * 4);
    if (tasks <= 1) {
      f(0, n);
      return;
    }
    pool_.parallel_for(tasks, [&](uint32_t task, unsigned) {
      const uint32_t b = static_cast<uint32_t>(uint64_t(n) * task / tasks);
      const uint32_t e = static_cast<uint32_t>(uint64_t(n) * (task + 1) / tasks);
      if (b < e) f(b, e);
    });
  }

  const HostTensor* find(WeightRef w) const {
    return w.w == Weight::Output ? &m_.output() : m_.find(w.w, w.layer);
  }
  const HostTensor& get(WeightRef w) const {
    return w.w == Weight::Output ? m_.output() : m_.get(w.w, w.layer);
  }
  // Norm weights, biases and rope factors are f32 in every GGUF the converters write.
  const float* f32_weight(WeightRef w) const {
    const HostTensor& t = get(w);
    if (t.type != gguf::TensorType::F32)
      throw std::runtime_error(t.name + ": the CPU backend reads this weight as f32");
    return reinterpret_cast<const float*>(t.data);
  }

  float* act(Act a) const { return acts_[size_t(a)]; }

  // A lookup of whole rows of `table` into `out` (ids to be set).
  cpu::GetRowsArgs rows_of(WeightRef table, Rows out) const {
    const HostTensor& w = get(table);
    cpu::GetRowsArgs g;
    g.type = w.type;
    g.weights = w.data;
    g.row_elems = static_cast<uint32_t>(w.cols());
    g.n_rows = static_cast<uint32_t>(w.rows());
    g.out = ptr(out);
    g.out_stride = out.stride;
    return g;
  }
  float* ptr(Rows r) const { return act(r.act) + r.off; }
  // An activation's rows (packed at width n when the stride is 0).
  cpu::SeqRows seq_rows(Rows r, uint32_t n) const { return {ptr(r), r.stride ? r.stride : n}; }
  CpuStepStates step_states() const { return {batch_, cache_.state_data.get(), cache_.states}; }
  // Rows as a kernel's pointer and stride (rows packed `width` wide when the stride is 0).
  cpu_gemma3n::RowsPtr rp(Rows r, uint32_t width) const {
    return {ptr(r), r.stride ? r.stride : width};
  }
  uint16_t* region_data(uint32_t layer, bool value) const { return cache_.region(layer, value); }

  cpu::RopeParams rope_params(const RopeSpec& r) const {
    cpu::RopeParams p;
    p.head_dim = r.head_dim;
    p.n_dims = r.n_dims;
    p.neox = r.neox;
    p.freq_base = r.freq_base;
    p.freq_scale = r.freq_scale;
    p.temp_scale = r.temp_scale;
    p.temp_floor = r.temp_floor;
    p.temp_offset = r.temp_offset;
    p.rotate = r.rotate;
    p.mrope_sections = r.mrope_sections;
    p.mrope_interleaved = r.mrope_interleaved;
    if (!rope_pos_.empty()) p.mrope_pos = rope_pos_.data();
    if (r.freq_factors && find({Weight::RopeFreqs}))
      p.freq_factors = f32_weight({Weight::RopeFreqs});
    return p;
  }

  void allocate_activations() {
    const uint64_t T = opt_.max_batch_tokens, E = spec_.n_embd;
    const uint64_t qd = spec_.n_embd_q(), kvd = spec_.n_embd_k_gqa();
    const uint64_t ff = spec_.ffn_act_width(), R = opt_.max_logits_rows;
    // Encoders pool into Logits (n_embd_out per row).
    const uint64_t V = spec_.is_encoder() ? spec_.encoder_rows_width() : spec_.n_vocab;
    // In Act order.
    const uint64_t qkv = spec_.qkv_act_width(), attn = spec_.attn_act_width();
    // Gemma 3n's AltUp streams, per-layer inputs and scratch rows (0 for other models).
    const uint64_t A = spec_.n_altup, PL = uint64_t(spec_.n_layer) * spec_.n_embd_altup;
    const uint64_t g = spec_.has_per_layer_inputs() || spec_.is_gemma4() ? 1 : 0;
    // Gemma 4's MoE layers: the experts' input and the router's (Aux, AuxB; T x n_embd).
    const uint64_t aux = std::max({PL, (A ? A - 1 : 0) * E, spec_.is_gemma4() ? E : 0}),
                   aux_b = std::max<uint64_t>(E, spec_.laurel_rank);
    const uint64_t sizes[kActs] = {
        T * E,         T * E,      T * qd,      T * kvd,       T * kvd, T * qkv,  T * attn,
        T * ff,        T * ff * 2, T * ff,      R * E,         R * E,   R * V,    g * T * A * E,
        g * T * A * E, g * T * PL, g * T * aux, g * T * aux_b, T * A,   T * A * A};
    uint64_t total = 0;
    for (uint64_t s : sizes) total += (s + 15) / 16 * 16;
    storage_ = host_array<float>(total);
    float* p = storage_.get();
    for (size_t i = 0; i < kActs; ++i) {
      acts_[i] = p;
      p += (sizes[i] + 15) / 16 * 16;
    }
    ids_ = host_array<uint32_t>(T);
    sel_ = host_array<uint32_t>(R);
    greedy_ = host_array<uint32_t>(R);
    act_bytes_ = total * 4 + 4 * (T + 2 * R);
  }

  const HostModel& m_;
  const model::ModelSpec& spec_;
  RunnerOptions opt_;
  cpu::Isa isa_;
  std::unique_ptr<cpu::ThreadPool> own_pool_;  // RunnerOptions::cpu_threads set
  cpu::ThreadPool& pool_;
  cpu::MatmulWorkspace ws_;
  CpuMoeScratch moe_;     // the MoE FFN's buffers, grown to the largest step
  CpuCacheMemory cache_;  // the paged K/V regions, the recurrent states and their checkpoints
  std::unique_ptr<float[], FreeBytes> storage_;
  float* acts_[kActs] = {};
  std::unique_ptr<uint32_t[], FreeBytes> ids_, sel_, greedy_;
  uint64_t act_bytes_ = 0;
  std::vector<float> partials_;
  // The step's batch.
  std::vector<uint32_t> meta_;
  std::vector<uint32_t> rope_pos_;      // rope_positions(): 3 per step token (M-RoPE models)
  std::vector<InjectedRows> injected_;  // set_injected_rows: this step's, cleared by the next
  cpu::BatchView batch_;
  uint32_t max_kv_len_ = 0;
  bool marking_ = false;
  Act results_ = Act::HSel;  // what hidden() reads: the last step's outputs
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> marks_;
};

}  // namespace

std::unique_ptr<StepBackend> make_cpu_backend(const HostModel& model, RunnerOptions& opt) {
  return std::make_unique<CpuBackend>(model, opt);
}

}  // namespace vkllm::runtime
