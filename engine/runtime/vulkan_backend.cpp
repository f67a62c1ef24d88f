#include "engine/runtime/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/runtime/vulkan_step_buffers.h"
#include "engine/runtime/weight_ops.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// VKLLM_ATTN_Q8=0: the output projection quantizes the attention output in its own pass instead
// of taking the q8 copy the attention kernel or its split-K reduction writes (for A/B
// measurements).
bool attention_q8_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("VKLLM_ATTN_Q8");
    return !v || std::string(v) != "0";
  }();
  return on;
}

class VulkanBackend final : public StepBackend {
 public:
  VulkanBackend(const Model& model, RunnerOptions& o)
      : ctx_(model.context()),
        m_(model),
        spec_(model.spec()),
        mem_(ctx_, model, o),
        opt_(mem_.opt),
        matmul_(ctx_.pipelines(), {.int8_dot = o.int8_dot}),
        rec_(ctx_.device()) {
    // Devices that do not report their compute units get a middling guess for split-K.
    compute_units_ = ctx_.caps().compute_units ? ctx_.caps().compute_units : 16;
  }

  // ---- Graph operations.

  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override {
    vk::ops::GetRowsArgs g;
    g.ids = mem_.ids_in.slice();
    g.n_tokens = n_tokens;
    g.out = mem_.slice(out);
    g.scale = scale;
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  // The norms feeding decode products write their q8 copy too (no quantize dispatch).
  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef> feeds) override {
    const bool q8 = wants_q8(feeds, n, rows);
    vk::ops::RmsNormArgs a;
    a.q8 = q8 ? mem_.xq : vk::BufferSlice{};
    a.x = mem_.slice(x);
    a.weight = get(w).data;
    a.y = mem_.slice(y);
    a.n = n;
    a.n_rows = rows;
    a.x_stride = x.stride;
    a.y_stride = y.stride;
    a.eps = spec_.norm_eps;
    vk::ops::rms_norm(rec_, ctx_.pipelines(), a);
    wrote(y.act);
    if (q8) q8_of_ = Q8Copy{y.act, rows, mem_.xq};
  }

  // The decode kernel (in passes of up to 8 vectors) for small batches, the tiled GEMM above
  // opt.matvec_max_batch tokens; int8-dot decode kernels read x's q8 copy, made here unless the
  // norm or activation that wrote x made it.
  void products(Rows x, uint32_t n, std::span<const ProductOut> outs) override {
    WeightRef weights[4];
    if (outs.empty() || outs.size() > 4) throw std::logic_error("products: 1 to 4 outputs");
    const size_t n_weights = outs.size();
    for (size_t i = 0; i < n_weights; ++i) weights[i] = outs[i].w;
    const uint32_t cols = static_cast<uint32_t>(get(outs.front().w).cols());
    vk::BufferSlice in_q8;
    if (wants_q8(std::span<const WeightRef>(weights, n_weights), cols, n))
      in_q8 = q8_input(x, cols, n);
    for (const auto& o : outs) {
      vk::MatmulArgs a;
      a.x = mem_.slice(x);
      a.x_stride = x.stride;
      a.y = mem_.buf(o.y.act);
      a.y_offset = o.y.off;
      a.y_stride = o.y.stride;
      a.batch = n;
      a.accumulate = o.accumulate;
      a.xq = in_q8;
      record_product(matmul_, rec_, get(o.w), a, n <= opt_.matvec_max_batch);
      wrote(o.y.act);
    }
  }

  // With opt.fused_norm, at batch 1 the norm runs in the product's last workgroup
  // (MatmulKernels::record_matvec_norm): one dispatch and barrier fewer per residual product.
  // Not at larger batches: the last workgroup normalizes the vectors one after another.
  void products_then_norm(Rows in, uint32_t n, const ProductOut& out,
                          const NormAfter& norm) override {
    const DeviceTensor& w = get(out.w);
    const uint32_t cols = static_cast<uint32_t>(w.cols()), rows = static_cast<uint32_t>(w.rows());
    const bool fuse = opt_.fused_norm && n == 1 && out.accumulate && w.parts.size() == 1 &&
                      out.y.act == norm.x.act && out.y.off == 0 && norm.x.off == 0 &&
                      out.y.stride == norm.x.stride && norm.n == rows &&
                      wants_q8(std::span(&out.w, 1), cols, n) && wants_q8(norm.feeds, rows, n) &&
                      matmul_.can_fuse_norm(w.type, rows, n, 0, out.y.stride);
    if (!fuse) {
      StepBackend::products_then_norm(in, n, out, norm);
      return;
    }
    vk::MatmulArgs a;
    a.type = w.type;
    a.weights = w.data;
    a.x = mem_.slice(in);
    a.x_stride = in.stride;
    a.y = mem_.buf(out.y.act);
    a.y_stride = out.y.stride ? out.y.stride : rows;
    a.rows = rows;
    a.cols = cols;
    a.batch = n;
    a.accumulate = true;
    a.xq = q8_input(in, cols, n);
    vk::NormEpilogue e;
    e.weight = get(norm.w).data;
    e.y = mem_.slice(norm.y);
    e.y_stride = norm.y.stride;
    // The norm's q8 copy overwrites the product's q8 input in place: the last workgroup writes
    // it only after every workgroup has finished reading.
    e.q8 = mem_.xq;
    e.counter = mem_.norm_counter;
    e.eps = spec_.norm_eps;
    matmul_.record_matvec_norm(rec_, a, e);
    wrote(out.y.act);
    wrote(norm.y.act);
    q8_of_ = Q8Copy{norm.y.act, n, mem_.xq};
  }

  // With opt.fused_glu, decode's gate|up product writes act(gate) * up and its q8 blocks
  // itself (MatmulKernels::record_matvec_glu): the GLU's dispatch and barrier go away.
  void products_then_glu(Rows x, uint32_t n, std::span<const ProductOut> outs,
                         const GluAfter& glu) override {
    const DeviceTensor* w = outs.size() == 1 ? &get(outs[0].w) : nullptr;
    const bool fuse =
        w && opt_.fused_glu && n <= vk::MatmulKernels::kMaxMatvecColumns && !outs[0].accumulate &&
        w->parts.size() == 1 && w->rows() == 2 * uint64_t{glu.n} && glu.gate.act == outs[0].y.act &&
        glu.up.act == outs[0].y.act && glu.gate.off == 0 && glu.up.off == glu.n &&
        glu.out.off == 0 &&
        wants_q8(std::span(&outs[0].w, 1), static_cast<uint32_t>(w->cols()), n) &&
        wants_q8(glu.feeds, glu.n, n) && matmul_.can_fuse_glu(w->type, glu.n, n, 0, glu.out.stride);
    if (!fuse) {
      StepBackend::products_then_glu(x, n, outs, glu);
      return;
    }
    const auto cols = static_cast<uint32_t>(w->cols());
    vk::MatmulArgs a;
    a.type = w->type;
    a.weights = w->data;
    a.x = mem_.slice(x);
    a.x_stride = x.stride;
    a.y = mem_.slice(glu.out);
    a.y_stride = glu.out.stride;
    a.rows = glu.n;
    a.cols = cols;
    a.batch = n;
    a.xq = q8_input(x, cols, n);
    vk::GluEpilogue e;
    e.act = glu.act == GluAct::Silu ? 0 : 1;
    e.up_rows = glu.n;
    e.q8 = mem_.xq_ffn;
    e.counters = mem_.glu_counters;
    matmul_.record_matvec_glu(rec_, a, e);
    wrote(glu.out.act);
    q8_of_ = Q8Copy{glu.out.act, n, mem_.xq_ffn};
  }

  // With opt.fused_rope_kv, decode's Q|K|V products (stacked, or Q, K and V apart; int8-dot or
  // float-activation matvecs) rotate Q and K and write K and V into the cache themselves
  // (MatmulKernels::record_matvec_rope_kv): the RoPE/KV-write dispatches and their barrier go
  // away.
  void products_then_rope_kv(Rows x, uint32_t n, std::span<const ProductOut> outs,
                             const RopeKvAfter& r) override {
    const vk::ops::RopeParams rope = rope_params(r.rope);
    const uint32_t hd = spec_.head_dim, q_rows = r.n_q_heads * hd, kv_rows = spec_.n_head_kv * hd;
    // Where each product's rows start among Q|K|V, and the rows it must have.
    uint32_t bases[3] = {0, q_rows, q_rows + kv_rows}, rows[3] = {q_rows, kv_rows, kv_rows};
    const bool stacked = outs.size() == 1;
    if (stacked) rows[0] = q_rows + 2 * kv_rows;
    const Rows* ys[3] = {&r.q, &r.k, &r.v};
    const auto cols = static_cast<uint32_t>(get(outs[0].w).cols());
    bool fuse = opt_.fused_rope_kv && (stacked || outs.size() == 3) && n <= opt_.matvec_max_batch;
    if (stacked)
      fuse = fuse && r.q.off == 0 && r.k.off == q_rows && r.v.off == q_rows + kv_rows &&
             r.k.act == r.q.act && r.v.act == r.q.act && r.k.stride == r.q.stride &&
             r.v.stride == r.q.stride;
    for (size_t i = 0; fuse && i < outs.size(); ++i) {
      const DeviceTensor& w = get(outs[i].w);
      fuse = !outs[i].accumulate && w.parts.size() == 1 && w.rows() == rows[i] &&
             outs[i].y.act == ys[i]->act && (stacked || ys[i]->off == 0) &&
             matmul_.can_fuse_rope_kv(w.type, rope);
    }
    if (!fuse) {
      StepBackend::products_then_rope_kv(x, n, outs, r);
      return;
    }
    // The int8-dot products read x's q8 copy, the others x itself.
    WeightRef weights[3];
    for (size_t i = 0; i < outs.size(); ++i) weights[i] = outs[i].w;
    vk::BufferSlice xq;
    if (wants_q8(std::span<const WeightRef>(weights, outs.size()), cols, n))
      xq = q8_input(x, cols, n);
    vk::RopeKvEpilogue e;
    e.rope = rope;
    e.batch = batch_;
    e.k_cache = {mem_.k_region[r.layer], spec_.n_head_kv, opt_.block_size};
    e.v_cache = {mem_.v_region[r.layer], spec_.n_head_kv, opt_.block_size};
    e.q_rows = q_rows;
    e.kv_rows = kv_rows;
    for (size_t i = 0; i < outs.size(); ++i) {
      const DeviceTensor& w = get(outs[i].w);
      vk::MatmulArgs a;
      a.type = w.type;
      a.weights = w.data;
      a.x = mem_.slice(x);
      a.x_stride = x.stride;
      a.y = mem_.buf(ys[i]->act);
      a.y_stride = ys[i]->stride;
      a.rows = rows[i];
      a.cols = cols;
      a.batch = n;
      a.xq = xq;
      e.row_base = bases[i];
      matmul_.record_matvec_rope_kv(rec_, a, e);
    }
    wrote(r.q.act);
  }

  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override {
    const DeviceTensor* b = find(bias);
    if (!b) return;
    struct {
      uint32_t n, n_rows, stride, off;
    } push{n, rows, x.stride ? x.stride : n, x.off};
    const auto& p = ctx_.pipelines().get(
        {.shader = "add_bias", .num_buffers = 2, .push_constant_bytes = 16, .spec = {64}});
    rec_.dispatch(p, {mem_.buf(x.act), b->data}, push, {vk::div_up(n, 64), rows, 1});
    wrote(x.act);
  }

  void add(Rows a, Rows b, Rows out, uint64_t n) override {
    vk::ops::add(rec_, ctx_.pipelines(), mem_.slice(a), mem_.slice(b), mem_.slice(out),
                 static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override {
    const vk::ops::RopeParams p = rope_params(rope);
    vk::ops::rope(rec_, ctx_.pipelines(), p, batch_, mem_.head_rows(x), mem_.head_rows(x), n_heads);
    wrote(x.act);
  }

  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override {
    const vk::ops::CacheRegion region{(value ? mem_.v_region : mem_.k_region)[layer],
                                      spec_.n_head_kv, opt_.block_size};
    std::optional<vk::ops::RopeParams> p;
    if (rope) p = rope_params(*rope);
    vk::ops::write_kv(rec_, ctx_.pipelines(), p ? &*p : nullptr, batch_, mem_.head_rows(src),
                      spec_.head_dim, region);
  }

  void attention(const AttentionSpec& s) override {
    const uint32_t nkv = spec_.n_head_kv;
    vk::ops::AttentionArgs at;
    at.q = mem_.head_rows(s.q);
    at.k_cache = {mem_.k_region[s.layer], nkv, opt_.block_size};
    at.v_cache = {mem_.v_region[s.layer], nkv, opt_.block_size};
    at.batch = batch_;
    at.max_q_len = max_q_len_;
    at.out = mem_.head_rows(s.out);
    at.n_q_heads = s.n_q_heads;
    at.head_dim = s.head_dim;
    at.scale = s.scale;
    at.softcap = s.softcap;
    at.window = s.window;
    at.causal = s.causal;
    at.n_splits = 1;
    if (s.causal && batch_.n_tokens <= kMaxSplitTokens) {
      at.n_splits = std::min(
          {kMaxAttentionSplits, kAttentionSplitRows / batch_.n_tokens,
           vk::ops::attention_suggested_splits(max_kv_len_, batch_.n_seqs, nkv, compute_units_)});
      at.scratch = mem_.scratch;
    } else if (s.causal && batch_.n_tokens <= kAttentionSplitRows / 2) {
      // Prefill after a long context: few query tiles, each walking the whole context.
      at.n_splits =
          std::min(kAttentionSplitRows / batch_.n_tokens,
                   vk::ops::attention_prefill_splits(max_kv_len_, max_q_len_, batch_.n_seqs, nkv,
                                                     s.n_q_heads / nkv, compute_units_));
      at.scratch = mem_.scratch;
    }
    if (attention_q8_enabled() && wants_q8(s.feeds, s.n_q_heads * s.head_dim, batch_.n_tokens))
      at.q8 = mem_.xq;
    const bool q8 = vk::ops::attention_writes_q8(at);
    vk::ops::attention(rec_, ctx_.pipelines(), at);
    wrote(s.out.act);
    if (q8) q8_of_ = Q8Copy{s.out.act, batch_.n_tokens, mem_.xq};
  }

  // With a q8 copy for the products that read `out` next (FFN down).
  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef> feeds) override {
    const bool q8 = wants_q8(feeds, n, rows);
    vk::ops::GluArgs g;
    g.n = n;
    g.n_rows = rows;
    g.act = act == GluAct::Silu ? vk::ops::GluActivation::Silu : vk::ops::GluActivation::GeluTanh;
    g.gate = mem_.slice(gate);
    g.up = mem_.slice(up);
    g.out = mem_.slice(out);
    g.gate_stride = gate.stride;
    g.up_stride = up.stride;
    g.out_stride = out.stride;
    g.q8 = q8 ? mem_.xq : vk::BufferSlice{};
    vk::ops::glu(rec_, ctx_.pipelines(), g);
    wrote(out.act);
    if (q8) q8_of_ = Q8Copy{out.act, rows, mem_.xq};
  }

  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override {
    vk::ops::GetRowsArgs g;
    g.type = "f32";
    g.weights = mem_.slice(from);
    g.row_elems = n;
    g.row_bytes = n * 4;
    g.n_rows = batch_.n_tokens;
    g.ids = mem_.sel_in.slice();
    g.n_tokens = n_sel;
    g.out = mem_.slice(to);
    vk::ops::get_rows(rec_, ctx_.pipelines(), g);
    wrote(to.act);
  }

  void softcap(Rows x, uint64_t n, float cap) override {
    vk::ops::softcap(rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(x), static_cast<uint32_t>(n),
                     cap);
    wrote(x.act);
  }

  void argmax(Rows logits, uint32_t n, uint32_t rows) override {
    vk::ops::argmax(rec_, ctx_.pipelines(), mem_.slice(logits), mem_.greedy, n, rows, logits.stride,
                    mem_.argmax_scratch);
  }

  void barrier() override { rec_.barrier(); }

  void begin_layer(uint32_t layer) override {
    marking_ = opt_.profile && layer == 1;
    mark("layer_begin");
  }

  // The device starts on the first layers while the host records the rest, in about step_parts
  // parts.
  void end_layer(uint32_t layer) override {
    marking_ = false;
    const uint32_t layers_per_part =
        std::max<uint32_t>(1, spec_.n_layer / std::max<uint32_t>(1, opt_.step_parts));
    const bool boundary = layer == 0 || (layer + 1) % layers_per_part == 0;
    if (opt_.step_parts > 1 && boundary && layer + 1 < spec_.n_layer) rec_.flush();
  }

  void mark(const char* phase) override {
    if (marking_) rec_.timestamp(phase);
  }
  void timestamp(const char* phase) override { rec_.timestamp(phase); }

  // ---- Encoder operations.

  bool has(WeightRef w) const override { return find(w) != nullptr; }

  void embed_positions(WeightRef table, Rows out, uint32_t n_tokens) override {
    vk::ops::GetRowsArgs g;
    g.ids = mem_.pos_in.slice();
    g.n_tokens = n_tokens;
    g.out = mem_.slice(out);
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  // The row id goes into an upload buffer slot of its own (the step's rows are few).
  void embed_row(WeightRef table, uint32_t row, Rows out) override {
    if (n_row_ids_ == VulkanStepBuffers::kMaxRowIds)
      throw std::logic_error("embed_row: too many rows in one step");
    const uint64_t at = uint64_t(VulkanStepBuffers::kRowIdSpacing) * n_row_ids_++;
    std::memcpy(mem_.row_ids.mapped() + at, &row, 4);
    vk::ops::GetRowsArgs g;
    g.ids = mem_.row_ids.slice(at, 4);
    g.n_tokens = 1;
    g.out = mem_.slice(out);
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  void add_row(Rows row, Rows x, uint32_t n, uint32_t rows) override {
    vk::ops::add_bias(rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(row), n, rows);
    wrote(x.act);
  }

  void layer_norm(Rows x, WeightRef w, WeightRef b, Rows y, uint32_t n, uint32_t rows) override {
    vk::ops::LayerNormArgs a;
    a.x = mem_.slice(x);
    a.y = mem_.slice(y);
    a.weight = get(w).data;
    a.bias = get(b).data;
    a.n = n;
    a.n_rows = rows;
    a.eps = spec_.norm_eps;
    vk::ops::layer_norm(rec_, ctx_.pipelines(), a);
    wrote(y.act);
  }

  void gelu(Rows x, Rows out, uint64_t n) override {
    vk::ops::gelu(rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(out), static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void tanh(Rows x, Rows out, uint64_t n) override {
    vk::ops::tanh(rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(out), static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void pool(PoolMode mode, Rows x, uint32_t n, Rows out) override {
    const vk::ops::PoolMode m = mode == PoolMode::Mean    ? vk::ops::PoolMode::Mean
                                : mode == PoolMode::First ? vk::ops::PoolMode::First
                                                          : vk::ops::PoolMode::Last;
    vk::ops::pool_rows(rec_, ctx_.pipelines(), m, batch_, mem_.slice(x), n, mem_.slice(out));
    wrote(out.act);
  }

  void copy(Rows from, Rows to, uint64_t n) override {
    rec_.copy(mem_.slice(from).sub(0, n * 4), mem_.slice(to));
    wrote(to.act);
  }

  // ---- The Runner's side.

  uint32_t max_batch_tokens() const override { return opt_.max_batch_tokens; }
  uint32_t max_logits_rows() const override { return mem_.max_rows; }
  const kv::KvLayout& kv_layout() const override { return mem_.layout; }
  uint64_t kv_bytes() const override { return mem_.kv_arena->capacity(); }
  uint64_t activation_bytes() const override { return mem_.act_bytes; }
  uint32_t* token_ids() override { return reinterpret_cast<uint32_t*>(mem_.ids_in.mapped()); }
  uint32_t* selected_rows() override { return reinterpret_cast<uint32_t*>(mem_.sel_in.mapped()); }

  void begin_step(const kv::BatchMeta& meta) override {
    if (meta.words.size() > mem_.max_meta_words) throw std::logic_error("batch metadata overflow");
    std::memcpy(mem_.meta_in.mapped(), meta.words.data(), meta.words.size() * 4);
    batch_ = {mem_.meta_in.slice(), meta.n_tokens, meta.n_seqs};
    max_q_len_ = meta.max_q_len;
    max_kv_len_ = meta.max_kv_len;
    q8_of_.reset();
    n_row_ids_ = 0;
    if (spec_.position_embd) {  // the positions, as ids of learned position rows
      std::memcpy(mem_.pos_in.mapped(), meta.words.data() + meta.n_tokens, meta.n_tokens * 4ull);
    }
    rec_.begin();
    rec_.timestamp("start");
  }

  void end_step(const StepOutputs& out, uint32_t R) override {
    if (out.hidden) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
      rec_.copy(mem_.hsel.sub(0, bytes), mem_.readback.slice(0, bytes));
    }
    if (out.logits) {
      const uint64_t bytes = uint64_t(R) * spec_.n_vocab * 4;
      rec_.copy(mem_.logits.sub(0, bytes), mem_.readback.slice(0, bytes));
    }
    if (out.pooled) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd_out() * 4;
      rec_.copy(mem_.logits.sub(0, bytes), mem_.readback.slice(0, bytes));
    }
    if (out.token_states) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
      rec_.copy(mem_.x.sub(0, bytes), mem_.readback.slice(0, bytes));
    }
    if (out.greedy)
      rec_.copy(mem_.greedy.sub(0, 4ull * R), mem_.readback.slice(mem_.greedy_at(), 4ull * R));
    rec_.timestamp("output");
    rec_.submit_and_wait();
  }

  const float* logits() const override {
    return reinterpret_cast<const float*>(mem_.readback.mapped());
  }
  const uint32_t* greedy() const override {
    return reinterpret_cast<const uint32_t*>(mem_.readback.mapped() + mem_.greedy_at());
  }
  const float* hidden() const override {
    return reinterpret_cast<const float*>(mem_.readback.mapped());
  }

  // Walks the dry steps with a dry CommandRecorder, collecting the pipelines they ask for, then
  // builds them on worker threads and saves the device's pipeline cache.
  size_t warm_up(const std::function<void()>& dry_steps) override {
    auto& P = ctx_.pipelines();
    const uint64_t before = P.stats().created;
    std::vector<vk::PipelineDesc> descs;
    {
      vk::PipelineCache::Collector collect(P);
      rec_.set_dry(true);
      struct Wet {
        vk::CommandRecorder& rec;
        ~Wet() { rec.set_dry(false); }
      } wet{rec_};
      dry_steps();
      descs = collect.descs();
    }
    P.build(descs);
    const uint64_t created = P.stats().created - before;
    if (created > 0) P.save();
    return created;
  }

  std::vector<std::pair<std::string, double>> timings() const override {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& t : rec_.timings()) out.emplace_back(t.label, t.ms);
    return out;
  }

 private:
  // Which activation a q8 buffer (xq or xq_ffn) holds a copy of (rows of the width its products
  // read).
  struct Q8Copy {
    Act act;
    uint32_t rows;
    vk::BufferSlice q8;
  };

  const DeviceTensor* find(WeightRef w) const {
    return w.w == Weight::Output ? &m_.output() : m_.find(w.w, w.layer);
  }
  const DeviceTensor& get(WeightRef w) const {
    return w.w == Weight::Output ? m_.output() : m_.get(w.w, w.layer);
  }

  // The q8 copy of x (n rows of cols) for int8-dot products, quantized here unless the kernel
  // that wrote x made it.
  vk::BufferSlice q8_input(Rows x, uint32_t cols, uint32_t n) {
    if (!q8_of_ || q8_of_->act != x.act || q8_of_->rows != n || x.off != 0) {
      matmul_.record_quantize_q8(rec_, mem_.slice(x), cols, n, 0, mem_.xq);
      rec_.barrier();
      mark("quantize_q8");
      q8_of_ = Q8Copy{x.act, n, mem_.xq};
    }
    return q8_of_->q8;
  }

  // Whether decode products of these weights read `in` (n rows of cols) as q8 blocks.
  bool wants_q8(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const {
    return n <= opt_.matvec_max_batch && cols % 32 == 0 &&
           std::any_of(weights.begin(), weights.end(), [&](const WeightRef& w) {
             const DeviceTensor* t = find(w);
             return t && matmul_.int8_dot(t->type);
           });
  }

  vk::ops::RopeParams rope_params(const RopeSpec& r) const {
    vk::ops::RopeParams p;
    p.head_dim = r.head_dim;
    p.n_dims = r.n_dims;
    p.neox = r.neox;
    p.freq_base = r.freq_base;
    p.freq_scale = r.freq_scale;
    if (r.freq_factors)
      if (const auto* f = m_.find(Weight::RopeFreqs)) p.freq_factors = f->data;
    return p;
  }

  // An activation was overwritten: a q8 copy of it is stale.
  void wrote(Act a) {
    if (q8_of_ && q8_of_->act == a) q8_of_.reset();
  }

  vk::Context& ctx_;
  const Model& m_;
  const model::ModelSpec& spec_;
  // First in, last out: the step's memory outlives the recorder whose commands use it.
  VulkanStepBuffers mem_;
  const RunnerOptions& opt_;  // with the limits mem_ lowered
  vk::MatmulKernels matmul_;
  vk::CommandRecorder rec_;
  uint32_t compute_units_ = 8;
  bool marking_ = false;    // recording the profiled layer
  uint32_t n_row_ids_ = 0;  // embed_row's ids in this step
  // The step's batch.
  vk::ops::BatchInfo batch_;
  uint32_t max_q_len_ = 0, max_kv_len_ = 0;
  std::optional<Q8Copy> q8_of_;
};

}  // namespace

std::unique_ptr<StepBackend> make_vulkan_backend(const Model& model, RunnerOptions& opt) {
  return std::make_unique<VulkanBackend>(model, opt);
}

}  // namespace vkllm::runtime
