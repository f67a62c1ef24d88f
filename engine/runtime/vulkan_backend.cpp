#include "engine/runtime/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/runtime/weight_ops.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// VKLLM_ATTN_Q8=0: the output projection quantizes the attention output in its own pass instead
// of taking the q8 copy the split-K reduction writes (for A/B measurements).
bool attention_q8_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("VKLLM_ATTN_Q8");
    return !v || std::string(v) != "0";
  }();
  return on;
}

constexpr uint32_t kMaxAttentionSplits = 16;
constexpr uint32_t kMaxSplitTokens = 64;  // split-K only for decode-sized steps

class VulkanBackend final : public StepBackend {
 public:
  VulkanBackend(const Model& model, RunnerOptions& o)
      : ctx_(model.context()),
        m_(model),
        spec_(model.spec()),
        matmul_(ctx_.pipelines(), {.int8_dot = o.int8_dot}),
        rec_(ctx_.device()) {
    // Activations and logits are bound whole: keep a step's tokens and logits rows within one
    // storage-buffer binding (lavapipe: 128 MiB; VKLLM_MAX_BINDING_RANGE lowers it).
    const uint64_t range = ctx_.caps().max_storage_buffer_range;
    const uint64_t token_bytes =
        4 * std::max<uint64_t>({uint64_t(spec_.n_embd_q()) + 2ull * spec_.n_embd_k_gqa(),
                                2ull * spec_.n_ff, spec_.n_embd});
    const uint64_t logits_row_bytes = 4ull * spec_.n_vocab;
    if (uint64_t(o.max_seqs) * std::max(token_bytes, logits_row_bytes) > range) {
      throw std::invalid_argument(std::to_string(o.max_seqs) +
                                  " sequences per step need activations larger than the "
                                  "device's storage-buffer range of " +
                                  std::to_string(range) + " bytes");
    }
    o.max_batch_tokens =
        static_cast<uint32_t>(std::min<uint64_t>(o.max_batch_tokens, range / token_bytes));
    o.max_logits_rows =
        static_cast<uint32_t>(std::min<uint64_t>(o.max_logits_rows, range / logits_row_bytes));
    opt_ = o;
    max_rows_ = o.max_logits_rows;
    // Devices that do not report their compute units get a middling guess for split-K.
    compute_units_ = ctx_.caps().compute_units ? ctx_.caps().compute_units : 16;
    allocate_activations();
    allocate_kv();
  }

  // ---- Graph operations.

  void embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) override {
    vk::ops::GetRowsArgs g;
    g.ids = ids_in_.slice();
    g.n_tokens = n_tokens;
    g.out = slice(out);
    g.scale = scale;
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  // The norms feeding decode products write their q8 copy too (no quantize dispatch).
  void rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                std::span<const WeightRef> feeds) override {
    const bool q8 = wants_q8(feeds, n, rows);
    vk::ops::RmsNormArgs a;
    a.q8 = q8 ? xq_ : vk::BufferSlice{};
    a.x = slice(x);
    a.weight = get(w).data;
    a.y = slice(y);
    a.n = n;
    a.n_rows = rows;
    a.x_stride = x.stride;
    a.y_stride = y.stride;
    a.eps = spec_.norm_eps;
    vk::ops::rms_norm(rec_, ctx_.pipelines(), a);
    wrote(y.act);
    if (q8) q8_of_ = Q8Copy{y.act, rows};
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
    if (wants_q8(std::span<const WeightRef>(weights, n_weights), cols, n)) {
      if (!q8_of_ || q8_of_->act != x.act || q8_of_->rows != n || x.off != 0) {
        matmul_.record_quantize_q8(rec_, slice(x), cols, n, 0, xq_);
        rec_.barrier();
        mark("quantize_q8");
        q8_of_ = Q8Copy{x.act, n};
      }
      in_q8 = xq_;
    }
    for (const auto& o : outs) {
      vk::MatmulArgs a;
      a.x = slice(x);
      a.x_stride = x.stride;
      a.y = buf(o.y.act);
      a.y_offset = o.y.off;
      a.y_stride = o.y.stride;
      a.batch = n;
      a.accumulate = o.accumulate;
      a.xq = in_q8;
      record_product(matmul_, rec_, get(o.w), a, n <= opt_.matvec_max_batch);
      wrote(o.y.act);
    }
  }

  void add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) override {
    const DeviceTensor* b = find(bias);
    if (!b) return;
    struct {
      uint32_t n, n_rows, stride, off;
    } push{n, rows, x.stride ? x.stride : n, x.off};
    const auto& p = ctx_.pipelines().get(
        {.shader = "add_bias", .num_buffers = 2, .push_constant_bytes = 16, .spec = {64}});
    rec_.dispatch(p, {buf(x.act), b->data}, push, {vk::div_up(n, 64), rows, 1});
    wrote(x.act);
  }

  void add(Rows a, Rows b, Rows out, uint64_t n) override {
    vk::ops::add(rec_, ctx_.pipelines(), slice(a), slice(b), slice(out), static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void rope(const RopeSpec& rope, Rows x, uint32_t n_heads) override {
    const vk::ops::RopeParams p = rope_params(rope);
    vk::ops::rope(rec_, ctx_.pipelines(), p, batch_, head_rows(x), head_rows(x), n_heads);
    wrote(x.act);
  }

  void write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) override {
    const vk::ops::CacheRegion region{(value ? v_region_ : k_region_)[layer], spec_.n_head_kv,
                                      opt_.block_size};
    std::optional<vk::ops::RopeParams> p;
    if (rope) p = rope_params(*rope);
    vk::ops::write_kv(rec_, ctx_.pipelines(), p ? &*p : nullptr, batch_, head_rows(src),
                      spec_.head_dim, region);
  }

  void attention(const AttentionSpec& s) override {
    const uint32_t nkv = spec_.n_head_kv;
    vk::ops::AttentionArgs at;
    at.q = head_rows(s.q);
    at.k_cache = {k_region_[s.layer], nkv, opt_.block_size};
    at.v_cache = {v_region_[s.layer], nkv, opt_.block_size};
    at.batch = batch_;
    at.max_q_len = max_q_len_;
    at.out = head_rows(s.out);
    at.n_q_heads = s.n_q_heads;
    at.head_dim = s.head_dim;
    at.scale = s.scale;
    at.softcap = s.softcap;
    at.window = s.window;
    at.causal = s.causal;
    at.n_splits = 1;
    if (s.causal && batch_.n_tokens <= kMaxSplitTokens) {
      at.n_splits = std::min(
          kMaxAttentionSplits,
          vk::ops::attention_suggested_splits(max_kv_len_, batch_.n_seqs, nkv, compute_units_));
      at.scratch = scratch_;
    }
    if (attention_q8_enabled() && wants_q8(s.feeds, s.n_q_heads * s.head_dim, batch_.n_tokens))
      at.q8 = xq_;
    const bool q8 = vk::ops::attention_writes_q8(at);
    vk::ops::attention(rec_, ctx_.pipelines(), at);
    wrote(s.out.act);
    if (q8) q8_of_ = Q8Copy{s.out.act, batch_.n_tokens};
  }

  // With a q8 copy for the products that read `out` next (FFN down).
  void glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
           std::span<const WeightRef> feeds) override {
    const bool q8 = wants_q8(feeds, n, rows);
    vk::ops::GluArgs g;
    g.n = n;
    g.n_rows = rows;
    g.act = act == GluAct::Silu ? vk::ops::GluActivation::Silu : vk::ops::GluActivation::GeluTanh;
    g.gate = slice(gate);
    g.up = slice(up);
    g.out = slice(out);
    g.gate_stride = gate.stride;
    g.up_stride = up.stride;
    g.out_stride = out.stride;
    g.q8 = q8 ? xq_ : vk::BufferSlice{};
    vk::ops::glu(rec_, ctx_.pipelines(), g);
    wrote(out.act);
    if (q8) q8_of_ = Q8Copy{out.act, rows};
  }

  void select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) override {
    vk::ops::GetRowsArgs g;
    g.type = "f32";
    g.weights = slice(from);
    g.row_elems = n;
    g.row_bytes = n * 4;
    g.n_rows = batch_.n_tokens;
    g.ids = sel_in_.slice();
    g.n_tokens = n_sel;
    g.out = slice(to);
    vk::ops::get_rows(rec_, ctx_.pipelines(), g);
    wrote(to.act);
  }

  void softcap(Rows x, uint64_t n, float cap) override {
    vk::ops::softcap(rec_, ctx_.pipelines(), slice(x), slice(x), static_cast<uint32_t>(n), cap);
    wrote(x.act);
  }

  void argmax(Rows logits, uint32_t n, uint32_t rows) override {
    vk::ops::argmax(rec_, ctx_.pipelines(), slice(logits), greedy_, n, rows, logits.stride,
                    argmax_scratch_);
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
    g.ids = pos_in_.slice();
    g.n_tokens = n_tokens;
    g.out = slice(out);
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  // The row id goes into an upload buffer slot of its own (the step's rows are few).
  void embed_row(WeightRef table, uint32_t row, Rows out) override {
    if (n_row_ids_ == kMaxRowIds) throw std::logic_error("embed_row: too many rows in one step");
    const uint64_t at = uint64_t(kRowIdSpacing) * n_row_ids_++;
    std::memcpy(row_ids_.mapped() + at, &row, 4);
    vk::ops::GetRowsArgs g;
    g.ids = row_ids_.slice(at, 4);
    g.n_tokens = 1;
    g.out = slice(out);
    record_get_rows(rec_, ctx_.pipelines(), get(table), g);
    wrote(out.act);
  }

  void add_row(Rows row, Rows x, uint32_t n, uint32_t rows) override {
    vk::ops::add_bias(rec_, ctx_.pipelines(), slice(x), slice(row), n, rows);
    wrote(x.act);
  }

  void layer_norm(Rows x, WeightRef w, WeightRef b, Rows y, uint32_t n, uint32_t rows) override {
    vk::ops::LayerNormArgs a;
    a.x = slice(x);
    a.y = slice(y);
    a.weight = get(w).data;
    a.bias = get(b).data;
    a.n = n;
    a.n_rows = rows;
    a.eps = spec_.norm_eps;
    vk::ops::layer_norm(rec_, ctx_.pipelines(), a);
    wrote(y.act);
  }

  void gelu(Rows x, Rows out, uint64_t n) override {
    vk::ops::gelu(rec_, ctx_.pipelines(), slice(x), slice(out), static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void tanh(Rows x, Rows out, uint64_t n) override {
    vk::ops::tanh(rec_, ctx_.pipelines(), slice(x), slice(out), static_cast<uint32_t>(n));
    wrote(out.act);
  }

  void pool(PoolMode mode, Rows x, uint32_t n, Rows out) override {
    const vk::ops::PoolMode m = mode == PoolMode::Mean    ? vk::ops::PoolMode::Mean
                                : mode == PoolMode::First ? vk::ops::PoolMode::First
                                                          : vk::ops::PoolMode::Last;
    vk::ops::pool_rows(rec_, ctx_.pipelines(), m, batch_, slice(x), n, slice(out));
    wrote(out.act);
  }

  void copy(Rows from, Rows to, uint64_t n) override {
    rec_.copy(slice(from).sub(0, n * 4), slice(to));
    wrote(to.act);
  }

  // ---- The Runner's side.

  uint32_t max_batch_tokens() const override { return opt_.max_batch_tokens; }
  uint32_t max_logits_rows() const override { return max_rows_; }
  const kv::KvLayout& kv_layout() const override { return layout_; }
  uint64_t kv_bytes() const override { return kv_arena_->capacity(); }
  uint64_t activation_bytes() const override { return act_bytes_; }
  uint32_t* token_ids() override { return reinterpret_cast<uint32_t*>(ids_in_.mapped()); }
  uint32_t* selected_rows() override { return reinterpret_cast<uint32_t*>(sel_in_.mapped()); }

  void begin_step(const kv::BatchMeta& meta) override {
    if (meta.words.size() > max_meta_words_) throw std::logic_error("batch metadata overflow");
    std::memcpy(meta_in_.mapped(), meta.words.data(), meta.words.size() * 4);
    batch_ = {meta_in_.slice(), meta.n_tokens, meta.n_seqs};
    max_q_len_ = meta.max_q_len;
    max_kv_len_ = meta.max_kv_len;
    q8_of_.reset();
    n_row_ids_ = 0;
    if (spec_.position_embd) {  // the positions, as ids of learned position rows
      std::memcpy(pos_in_.mapped(), meta.words.data() + meta.n_tokens, meta.n_tokens * 4ull);
    }
    rec_.begin();
    rec_.timestamp("start");
  }

  void end_step(const StepOutputs& out, uint32_t R) override {
    if (out.hidden) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
      rec_.copy(hsel_.sub(0, bytes), readback_.slice(0, bytes));
    }
    if (out.logits) {
      const uint64_t bytes = uint64_t(R) * spec_.n_vocab * 4;
      rec_.copy(logits_.sub(0, bytes), readback_.slice(0, bytes));
    }
    if (out.pooled) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd_out() * 4;
      rec_.copy(logits_.sub(0, bytes), readback_.slice(0, bytes));
    }
    if (out.token_states) {
      const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
      rec_.copy(x_.sub(0, bytes), readback_.slice(0, bytes));
    }
    if (out.greedy) rec_.copy(greedy_.sub(0, 4ull * R), readback_.slice(greedy_at(), 4ull * R));
    rec_.timestamp("output");
    rec_.submit_and_wait();
  }

  const float* logits() const override {
    return reinterpret_cast<const float*>(readback_.mapped());
  }
  const uint32_t* greedy() const override {
    return reinterpret_cast<const uint32_t*>(readback_.mapped() + greedy_at());
  }
  const float* hidden() const override {
    return reinterpret_cast<const float*>(readback_.mapped());
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
  // Which activation the q8 buffer holds a copy of (rows of the width its products read).
  struct Q8Copy {
    Act act;
    uint32_t rows;
  };

  const DeviceTensor* find(WeightRef w) const {
    return w.w == Weight::Output ? &m_.output() : m_.find(w.w, w.layer);
  }
  const DeviceTensor& get(WeightRef w) const {
    return w.w == Weight::Output ? m_.output() : m_.get(w.w, w.layer);
  }

  // Whether decode products of these weights read `in` (n rows of cols) as q8 blocks.
  bool wants_q8(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const {
    return n <= opt_.matvec_max_batch && cols % 32 == 0 &&
           std::any_of(weights.begin(), weights.end(), [&](const WeightRef& w) {
             const DeviceTensor* t = find(w);
             return t && matmul_.int8_dot(t->type);
           });
  }

  vk::BufferSlice& buf(Act a) {
    switch (a) {
      case Act::X:
        return x_;
      case Act::H:
        return h_;
      case Act::Q:
        return q_;
      case Act::K:
        return k_;
      case Act::V:
        return v_;
      case Act::QKV:
        return qkv_;
      case Act::Attn:
        return attn_;
      case Act::Gate:
        return gate_;
      case Act::Up:
        return up_;
      case Act::FfnAct:
        return ffn_act_;
      case Act::XSel:
        return xsel_;
      case Act::HSel:
        return hsel_;
      case Act::Logits:
        return logits_;
    }
    throw std::logic_error("unknown activation");
  }
  // The activation from the rows' first element on.
  vk::BufferSlice slice(Rows r) {
    vk::BufferSlice& b = buf(r.act);
    return r.off == 0 ? b : b.sub(uint64_t(r.off) * 4, b.size - uint64_t(r.off) * 4);
  }
  vk::ops::HeadRows head_rows(Rows r) { return {buf(r.act), r.off, r.stride}; }

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

  uint64_t greedy_at() const { return uint64_t(max_rows_) * spec_.n_vocab * 4; }
  uint64_t S_words() const { return std::max<uint32_t>(max_rows_, 4); }

  void allocate_activations() {
    const uint64_t T = opt_.max_batch_tokens, E = spec_.n_embd;
    const uint64_t qd = spec_.n_embd_q(), kvd = spec_.n_embd_k_gqa();
    // Encoders pool into Logits and read every token's row of X back.
    const bool encoder = spec_.is_encoder();
    const uint64_t ff = spec_.n_ff, R = max_rows_;
    const uint64_t V = encoder ? std::max(spec_.n_vocab, spec_.n_embd_out()) : spec_.n_vocab;
    const uint64_t split_bytes = vk::ops::attention_scratch_bytes(
        kMaxAttentionSplits, kMaxSplitTokens, spec_.n_head, spec_.head_dim);
    const uint64_t sizes[] = {T * E,  T * E,      T * qd, T * kvd, T * kvd, T * (qd + 2 * kvd),
                              T * qd, T * ff * 2, T * ff, T * ff,  R * E,   R * E,
                              R * V};
    const uint64_t align = 256;
    const uint64_t argmax_bytes = std::max<uint64_t>(vk::ops::argmax_scratch_bytes(V, R), 16);
    const uint64_t xq_bytes = vk::q8_activation_bytes(
        static_cast<uint32_t>(std::max({E, qd, ff})),
        static_cast<uint32_t>(std::min<uint64_t>(std::max(T, R), opt_.matvec_max_batch)));
    act_bytes_ = split_bytes + argmax_bytes + xq_bytes + 3 * align + 4 * (S_words() + align);
    for (uint64_t s : sizes) act_bytes_ += (s * 4 + align - 1) / align * align + align;
    act_.emplace(ctx_.device(), "activations", act_bytes_);
    auto f32 = [&](uint64_t n) { return act_->allocate(n * 4); };
    x_ = f32(T * E);
    h_ = f32(T * E);
    q_ = f32(T * qd);
    k_ = f32(T * kvd);
    v_ = f32(T * kvd);
    qkv_ = f32(T * (qd + 2 * kvd));
    attn_ = f32(T * qd);
    up_ = f32(T * ff * 2);  // fused gate|up needs twice n_ff
    gate_ = f32(T * ff);
    ffn_act_ = f32(T * ff);
    xsel_ = f32(R * E);
    hsel_ = f32(R * E);
    logits_ = f32(R * V);
    greedy_ = act_->allocate(4 * S_words());
    scratch_ = act_->allocate(split_bytes);
    argmax_scratch_ = act_->allocate(argmax_bytes);
    xq_ = act_->allocate(xq_bytes);

    const uint32_t max_blocks = (opt_.max_context + opt_.block_size - 1) / opt_.block_size;
    max_meta_words_ = static_cast<uint32_t>(2 * T + 4 * opt_.max_seqs + opt_.max_seqs * max_blocks);
    ids_in_ = vk::Buffer(ctx_.device(), 4 * T, vk::MemoryKind::Upload, "step token ids");
    sel_in_ = vk::Buffer(ctx_.device(), 4 * R, vk::MemoryKind::Upload, "step logits rows");
    meta_in_ = vk::Buffer(ctx_.device(), 4ull * max_meta_words_, vk::MemoryKind::Upload,
                          "step batch metadata");
    if (spec_.position_embd) {
      pos_in_ = vk::Buffer(ctx_.device(), 4 * T, vk::MemoryKind::Upload, "step positions");
    }
    if (encoder) {
      row_ids_ = vk::Buffer(ctx_.device(), uint64_t(kRowIdSpacing) * kMaxRowIds,
                            vk::MemoryKind::Upload, "step row ids");
    }
    readback_ = vk::Buffer(ctx_.device(),
                           4 * (std::max(R * std::max(V, E), encoder ? T * E : 0) + S_words()),
                           vk::MemoryKind::Readback, "step results");
  }

  void allocate_kv() {
    layout_.n_kv_heads = spec_.n_head_kv;
    layout_.head_dim = spec_.head_dim;
    layout_.block_size = opt_.block_size;
    if (opt_.kv_scratch_blocks > 0) {  // one K and one V region shared by every layer
      layout_.num_blocks = opt_.kv_scratch_blocks;
      const uint64_t region = layout_.region_bytes();
      kv_arena_.emplace(ctx_.device(), "scratch k/v", (region + 256) * 2,
                        vk::MemoryKind::DeviceLocal, region + 256);
      k_region_.assign(spec_.n_layer, kv_arena_->allocate(region));
      v_region_.assign(spec_.n_layer, kv_arena_->allocate(region));
      return;
    }
    const uint64_t per_block = 2ull * spec_.n_layer * spec_.n_head_kv * opt_.block_size *
                               spec_.head_dim * 2;  // K and V, f16
    uint64_t budget = opt_.kv_budget_bytes;
    if (budget == 0) {
      // Enough for every sequence at full context, but at most half of what the weights and
      // activations leave of the device's largest memory heap.
      const uint64_t heap = ctx_.caps().device_local_bytes;
      const uint64_t used = m_.weight_bytes() + act_bytes_;
      const uint64_t share = heap > used ? (heap - used) / 2 : per_block * 64;
      const uint64_t want =
          per_block * opt_.max_seqs * ((opt_.max_context + opt_.block_size - 1) / opt_.block_size);
      budget = std::min(share, want);
    }
    uint64_t blocks = std::max<uint64_t>(budget / per_block, 1);
    // One layer's region must fit one arena block and one storage-buffer binding.
    const uint64_t region_limit =
        std::min<uint64_t>({uint64_t(1) << 30, ctx_.caps().max_storage_buffer_range});
    const uint64_t per_block_region = per_block / (2ull * spec_.n_layer);
    blocks = std::min(blocks, region_limit / per_block_region);
    blocks = std::min<uint64_t>(blocks, uint32_t(-1) / 2);
    layout_.num_blocks = static_cast<uint32_t>(blocks);
    const uint64_t region = layout_.region_bytes();
    kv_arena_.emplace(ctx_.device(), "kv cache", (region + 256) * 2 * spec_.n_layer,
                      vk::MemoryKind::DeviceLocal, region + 256);
    for (uint32_t l = 0; l < spec_.n_layer; ++l) {
      k_region_.push_back(kv_arena_->allocate(region));
      v_region_.push_back(kv_arena_->allocate(region));
    }
  }

  vk::Context& ctx_;
  const Model& m_;
  const model::ModelSpec& spec_;
  RunnerOptions opt_;
  kv::KvLayout layout_;
  std::optional<vk::Arena> kv_arena_;
  std::vector<vk::BufferSlice> k_region_, v_region_;
  std::optional<vk::Arena> act_;
  vk::Buffer ids_in_, sel_in_, meta_in_;  // host-written step inputs
  vk::Buffer pos_in_, row_ids_;           // encoders: positions, embed_row's row ids
  static constexpr uint32_t kMaxRowIds = 16;
  static constexpr uint32_t kRowIdSpacing = 256;  // any storage-buffer offset alignment
  uint32_t n_row_ids_ = 0;
  vk::Buffer readback_;
  vk::BufferSlice x_, h_, q_, k_, v_, qkv_, attn_, gate_, up_, ffn_act_, xsel_, hsel_, logits_,
      greedy_, scratch_, argmax_scratch_, xq_;
  vk::MatmulKernels matmul_;
  vk::CommandRecorder rec_;
  uint32_t max_rows_ = 0;  // logits rows per step
  uint32_t max_meta_words_ = 0;
  uint32_t compute_units_ = 8;
  uint64_t act_bytes_ = 0;
  bool marking_ = false;  // recording the profiled layer
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
