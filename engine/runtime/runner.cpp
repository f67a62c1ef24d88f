#include "engine/runtime/runner.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/kv/kv_layout.h"
#include "engine/runtime/weight_ops.h"
#include "engine/vulkan/attention.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/ops.h"

namespace vkllm::runtime {

namespace {

using model::Weight;

// "512M", "2G", "1048576" -> bytes; nullopt if unset or unparsable.
std::optional<uint64_t> env_bytes(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || x <= 0) throw std::invalid_argument(std::string(name) + ": not a size: " + v);
  switch (*end) {
    case 'k':
    case 'K':
      x *= 1024.0;
      break;
    case 'm':
    case 'M':
      x *= 1024.0 * 1024;
      break;
    case 'g':
    case 'G':
      x *= 1024.0 * 1024 * 1024;
      break;
    case '\0':
      break;
    default:
      throw std::invalid_argument(std::string(name) + ": not a size: " + v);
  }
  return static_cast<uint64_t>(x);
}

constexpr uint32_t kMaxAttentionSplits = 16;
constexpr uint32_t kMaxSplitTokens = 64;  // split-K only for decode-sized steps

}  // namespace

RunnerOptions RunnerOptions::from_env() {
  RunnerOptions o;
  if (auto b = env_bytes("VKLLM_KV_BUDGET")) o.kv_budget_bytes = *b;
  if (const char* mv = std::getenv("VKLLM_MATVEC_MAX_BATCH"); mv && *mv) {
    o.matvec_max_batch = static_cast<uint32_t>(std::strtoul(mv, nullptr, 10));
  }
  if (const char* w = std::getenv("VKLLM_WARM_UP"); w && *w) o.warm_up = std::string(w) != "0";
  if (const char* v = std::getenv("VKLLM_INT8_DOT"); v && *v) {
    const std::string mode = v;
    if (mode == "auto") {
      o.int8_dot = vk::Int8Dot::Auto;
    } else if (mode == "on" || mode == "1") {
      o.int8_dot = vk::Int8Dot::On;
    } else if (mode == "off" || mode == "0") {
      o.int8_dot = vk::Int8Dot::Off;
    } else {
      throw std::invalid_argument("VKLLM_INT8_DOT must be auto, on or off");
    }
  }
  if (const char* v = std::getenv("VKLLM_STEP_PARTS"); v && *v)
    o.step_parts = std::max<uint32_t>(1, static_cast<uint32_t>(std::strtoul(v, nullptr, 10)));
  if (const char* v = std::getenv("VKLLM_PROFILE"); v && *v) o.profile = std::string(v) != "0";
  if (const char* bs = std::getenv("VKLLM_BLOCK_SIZE"); bs && *bs) {
    o.block_size = static_cast<uint32_t>(std::strtoul(bs, nullptr, 10));
    if (o.block_size == 0 || o.block_size > 256) {
      throw std::invalid_argument("VKLLM_BLOCK_SIZE must be between 1 and 256");
    }
  }
  return o;
}

struct Runner::Impl {
  vk::Context& ctx;
  const Model& m;
  const model::ModelSpec& spec;
  RunnerOptions opt;
  kv::KvLayout layout;
  std::unique_ptr<kv::BlockPool> pool;
  std::optional<vk::Arena> kv_arena;
  std::vector<vk::BufferSlice> k_region, v_region;
  std::optional<vk::Arena> act;
  vk::Buffer ids_in, sel_in, meta_in;  // host-written step inputs
  vk::Buffer readback;
  vk::BufferSlice x, h, q, k, v, qkv, attn, gate, up, ffn_act, xsel, hsel, logits, greedy, scratch,
      argmax_scratch, xq;
  vk::MatmulKernels matmul;
  vk::CommandRecorder rec;
  uint32_t max_rows = 0;  // logits rows per step
  uint32_t max_meta_words = 0;
  uint32_t compute_units = 8;
  uint64_t act_bytes = 0;
  bool marking = false;  // recording the profiled layer

  void mark(const char* phase) {
    if (marking) rec.timestamp(phase);
  }

  Impl(const Model& model, const RunnerOptions& o)
      : ctx(model.context()),
        m(model),
        spec(model.spec()),
        opt(o),
        matmul(ctx.pipelines(), {.int8_dot = o.int8_dot}),
        rec(ctx.device()) {
    if (spec.is_encoder()) {
      throw std::invalid_argument(spec.arch_name + " is an encoder model: run it with an Encoder");
    }
    if (opt.max_context == 0) opt.max_context = std::min<uint32_t>(spec.n_ctx_train, 8192);
    if (opt.max_context == 0) opt.max_context = 2048;
    opt.max_seqs = std::max<uint32_t>(opt.max_seqs, 1);
    opt.max_batch_tokens = std::max(opt.max_batch_tokens, opt.max_seqs);
    max_rows = std::max(opt.max_seqs, opt.max_logits_rows);
    // Activations and logits are bound whole: keep a step's tokens and logits rows within one
    // storage-buffer binding (lavapipe: 128 MiB; VKLLM_MAX_BINDING_RANGE lowers it).
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    const uint64_t token_bytes =
        4 * std::max<uint64_t>({uint64_t(spec.n_embd_q()) + 2ull * spec.n_embd_k_gqa(),
                                2ull * spec.n_ff, spec.n_embd});
    const uint64_t logits_row_bytes = 4ull * spec.n_vocab;
    if (uint64_t(opt.max_seqs) * std::max(token_bytes, logits_row_bytes) > range) {
      throw std::invalid_argument(std::to_string(opt.max_seqs) +
                                  " sequences per step need activations larger than the "
                                  "device's storage-buffer range of " +
                                  std::to_string(range) + " bytes");
    }
    opt.max_batch_tokens =
        static_cast<uint32_t>(std::min<uint64_t>(opt.max_batch_tokens, range / token_bytes));
    max_rows = static_cast<uint32_t>(std::min<uint64_t>(max_rows, range / logits_row_bytes));
    opt.max_logits_rows = max_rows;
    // Devices that do not report their compute units get a middling guess for split-K.
    compute_units = ctx.caps().compute_units ? ctx.caps().compute_units : 16;
    allocate_activations();
    allocate_kv();
  }

  void allocate_activations() {
    const uint64_t T = opt.max_batch_tokens, E = spec.n_embd;
    const uint64_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa();
    const uint64_t ff = spec.n_ff, V = spec.n_vocab, R = max_rows;
    const uint64_t split_bytes = vk::ops::attention_scratch_bytes(
        kMaxAttentionSplits, kMaxSplitTokens, spec.n_head, spec.head_dim);
    const uint64_t sizes[] = {T * E,  T * E,      T * qd, T * kvd, T * kvd, T * (qd + 2 * kvd),
                              T * qd, T * ff * 2, T * ff, T * ff,  R * E,   R * E,
                              R * V};
    const uint64_t align = 256;
    const uint64_t argmax_bytes = std::max<uint64_t>(vk::ops::argmax_scratch_bytes(V, R), 16);
    const uint64_t xq_bytes = vk::q8_activation_bytes(
        static_cast<uint32_t>(std::max({E, qd, ff})),
        static_cast<uint32_t>(std::min<uint64_t>(std::max(T, R), opt.matvec_max_batch)));
    act_bytes = split_bytes + argmax_bytes + xq_bytes + 3 * align + 4 * (S_words() + align);
    for (uint64_t s : sizes) act_bytes += (s * 4 + align - 1) / align * align + align;
    act.emplace(ctx.device(), "activations", act_bytes);
    auto f32 = [&](uint64_t n) { return act->allocate(n * 4); };
    x = f32(T * E);
    h = f32(T * E);
    q = f32(T * qd);
    k = f32(T * kvd);
    v = f32(T * kvd);
    qkv = f32(T * (qd + 2 * kvd));
    attn = f32(T * qd);
    up = f32(T * ff * 2);  // fused gate|up needs twice n_ff
    gate = f32(T * ff);
    ffn_act = f32(T * ff);
    xsel = f32(R * E);
    hsel = f32(R * E);
    logits = f32(R * V);
    greedy = act->allocate(4 * S_words());
    scratch = act->allocate(split_bytes);
    argmax_scratch = act->allocate(argmax_bytes);
    xq = act->allocate(xq_bytes);

    const uint32_t max_blocks = (opt.max_context + opt.block_size - 1) / opt.block_size;
    max_meta_words = static_cast<uint32_t>(2 * T + 4 * opt.max_seqs + opt.max_seqs * max_blocks);
    ids_in = vk::Buffer(ctx.device(), 4 * T, vk::MemoryKind::Upload, "step token ids");
    sel_in = vk::Buffer(ctx.device(), 4 * R, vk::MemoryKind::Upload, "step logits rows");
    meta_in = vk::Buffer(ctx.device(), 4ull * max_meta_words, vk::MemoryKind::Upload,
                         "step batch metadata");
    readback = vk::Buffer(ctx.device(), 4 * (R * std::max(V, E) + S_words()),
                          vk::MemoryKind::Readback, "step results");
  }
  uint64_t S_words() const { return std::max<uint32_t>(max_rows, 4); }

  void allocate_kv() {
    layout.n_kv_heads = spec.n_head_kv;
    layout.head_dim = spec.head_dim;
    layout.block_size = opt.block_size;
    const uint64_t per_block =
        2ull * spec.n_layer * spec.n_head_kv * opt.block_size * spec.head_dim * 2;  // K and V, f16
    uint64_t budget = opt.kv_budget_bytes;
    if (budget == 0) {
      // Enough for every sequence at full context, but at most half of what the weights and
      // activations leave of the device's largest memory heap.
      const uint64_t heap = ctx.caps().device_local_bytes;
      const uint64_t used = m.weight_bytes() + act_bytes;
      const uint64_t share = heap > used ? (heap - used) / 2 : per_block * 64;
      const uint64_t want =
          per_block * opt.max_seqs * ((opt.max_context + opt.block_size - 1) / opt.block_size);
      budget = std::min(share, want);
    }
    uint64_t blocks = std::max<uint64_t>(budget / per_block, 1);
    // One layer's region must fit one arena block and one storage-buffer binding.
    const uint64_t region_limit =
        std::min<uint64_t>({uint64_t(1) << 30, ctx.caps().max_storage_buffer_range});
    const uint64_t per_block_region = per_block / (2ull * spec.n_layer);
    blocks = std::min(blocks, region_limit / per_block_region);
    blocks = std::min<uint64_t>(blocks, uint32_t(-1) / 2);
    layout.num_blocks = static_cast<uint32_t>(blocks);
    const uint64_t region = layout.region_bytes();
    kv_arena.emplace(ctx.device(), "kv cache", (region + 256) * 2 * spec.n_layer,
                     vk::MemoryKind::DeviceLocal, region + 256);
    for (uint32_t l = 0; l < spec.n_layer; ++l) {
      k_region.push_back(kv_arena->allocate(region));
      v_region.push_back(kv_arena->allocate(region));
    }
    pool = std::make_unique<kv::BlockPool>(layout.num_blocks);
  }

  // q8 copy of `in` (n rows of `cols`) for decode products whose weights take the int8-dot
  // kernels; one quantization serves every product reading `in` (Q/K/V, gate/up). Empty when
  // none does. Follows the barrier after `in` was written and adds its own.
  bool wants_q8(std::initializer_list<const DeviceTensor*> weights, uint32_t cols,
                uint32_t n) const {
    return n <= opt.matvec_max_batch && cols % 32 == 0 &&
           std::any_of(weights.begin(), weights.end(),
                       [&](const DeviceTensor* w) { return w && matmul.int8_dot(w->type); });
  }

  vk::BufferSlice quantized(std::initializer_list<const DeviceTensor*> weights, vk::BufferSlice in,
                            uint32_t cols, uint32_t n) {
    if (!wants_q8(weights, cols, n)) return {};
    matmul.record_quantize_q8(rec, in, cols, n, 0, xq);
    rec.barrier();
    mark("quantize_q8");
    return xq;
  }

  // Weight x activations: the decode kernel (in passes of up to 8 vectors) for small batches,
  // the tiled GEMM above opt.matvec_max_batch tokens. in_q8: `in` as q8 blocks for the int8-dot
  // decode kernels (see quantized()).
  void product(const DeviceTensor& w, vk::BufferSlice in, vk::BufferSlice out, uint32_t n,
               bool accumulate = false, vk::BufferSlice in_q8 = {}) {
    vk::MatmulArgs a;
    a.x = in;
    a.y = out;
    a.batch = n;
    a.accumulate = accumulate;
    a.xq = in_q8;
    record_product(matmul, rec, w, a, n <= opt.matvec_max_batch);
  }

  void add_bias(const DeviceTensor* b, vk::BufferSlice rows, uint32_t n, uint32_t T) {
    if (!b) return;
    struct {
      uint32_t n, n_rows, stride, off;
    } push{n, T, n, 0};
    const auto& p = ctx.pipelines().get(
        {.shader = "add_bias", .num_buffers = 2, .push_constant_bytes = 16, .spec = {64}});
    rec.dispatch(p, {rows, b->data}, push, {vk::div_up(n, 64), T, 1});
  }

  // With q8, the normalized rows are also written as q8 blocks for the int8-dot products.
  void norm(vk::BufferSlice in, const DeviceTensor& w, vk::BufferSlice out, uint32_t n,
            uint32_t rows, vk::BufferSlice q8 = {}) {
    vk::ops::RmsNormArgs a;
    a.q8 = q8;
    a.x = in;
    a.weight = w.data;
    a.y = out;
    a.n = n;
    a.n_rows = rows;
    a.eps = spec.norm_eps;
    vk::ops::rms_norm(rec, ctx.pipelines(), a);
  }

  void record_layer(uint32_t l, uint32_t T, const vk::ops::BatchInfo& batch, uint32_t max_q_len,
                    uint32_t max_kv_len) {
    auto& P = ctx.pipelines();
    const uint32_t E = spec.n_embd, hd = spec.head_dim, nh = spec.n_head, nkv = spec.n_head_kv;
    const uint32_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa(), ff = spec.n_ff;
    const bool swa = spec.layer_is_swa[l];

    marking = opt.profile && l == 1;
    mark("layer_begin");
    // The norms feeding decode products write their q8 copy too (no quantize dispatch).
    const bool qkv_q8 = spec.fused_qkv
                            ? wants_q8({&m.get(Weight::AttnQKV, l)}, E, T)
                            : wants_q8({m.find(Weight::AttnQ, l), m.find(Weight::AttnK, l),
                                        m.find(Weight::AttnV, l)},
                                       E, T);
    const vk::BufferSlice hq = qkv_q8 ? xq : vk::BufferSlice{};
    norm(x, m.get(Weight::AttnNorm, l), h, E, T, hq);
    rec.barrier();
    mark("attn_norm");
    vk::ops::HeadRows qrows{q, 0, qd}, krows{k, 0, kvd}, vrows{v, 0, kvd};
    if (spec.fused_qkv) {
      const uint32_t stride = qd + 2 * kvd;
      product(m.get(Weight::AttnQKV, l), h, qkv, T, false, hq);
      qrows = {qkv, 0, stride};
      krows = {qkv, qd, stride};
      vrows = {qkv, qd + kvd, stride};
    } else {
      product(m.get(Weight::AttnQ, l), h, q, T, false, hq);
      product(m.get(Weight::AttnK, l), h, k, T, false, hq);
      product(m.get(Weight::AttnV, l), h, v, T, false, hq);
    }
    rec.barrier();
    mark("qkv");
    if (spec.qkv_bias) {
      add_bias(m.find(Weight::AttnQBias, l), q, qd, T);
      add_bias(m.find(Weight::AttnKBias, l), k, kvd, T);
      add_bias(m.find(Weight::AttnVBias, l), v, kvd, T);
      rec.barrier();
    }
    if (spec.qk_norm) {
      norm(q, m.get(Weight::AttnQNorm, l), q, hd, T * nh);
      norm(k, m.get(Weight::AttnKNorm, l), k, hd, T * nkv);
      rec.barrier();
    }
    vk::ops::RopeParams rope;
    rope.head_dim = hd;
    rope.n_dims = spec.rope_dims;
    rope.neox = spec.rope_ordering == model::RopeOrdering::NeoX;
    rope.freq_base = swa ? spec.rope_freq_base_swa : spec.rope_freq_base;
    rope.freq_scale = swa ? spec.rope_freq_scale_swa : spec.rope_freq_scale;
    if (const auto* f = m.find(Weight::RopeFreqs)) rope.freq_factors = f->data;
    vk::ops::rope(rec, P, rope, batch, qrows, qrows, nh);
    const vk::ops::CacheRegion kc{k_region[l], nkv, opt.block_size};
    const vk::ops::CacheRegion vc{v_region[l], nkv, opt.block_size};
    vk::ops::write_kv(rec, P, &rope, batch, krows, hd, kc);
    vk::ops::write_kv(rec, P, nullptr, batch, vrows, hd, vc);
    rec.barrier();
    mark("rope_kv_write");

    vk::ops::AttentionArgs at;
    at.q = qrows;
    at.k_cache = kc;
    at.v_cache = vc;
    at.batch = batch;
    at.max_q_len = max_q_len;
    at.out = {attn, 0, qd};
    at.n_q_heads = nh;
    at.head_dim = hd;
    at.scale = spec.attn_scale;
    at.softcap = spec.attn_softcap;
    at.window = swa ? spec.sliding_window : 0;
    at.n_splits = 1;
    if (T <= kMaxSplitTokens) {
      at.n_splits = std::min(
          kMaxAttentionSplits,
          vk::ops::attention_suggested_splits(max_kv_len, batch.n_seqs, nkv, compute_units));
      at.scratch = scratch;
    }
    vk::ops::attention(rec, P, at);
    rec.barrier();
    mark("attention");

    const auto attn_q = quantized({&m.get(Weight::AttnOut, l)}, attn, qd, T);
    if (spec.post_norms) {
      product(m.get(Weight::AttnOut, l), attn, h, T, false, attn_q);
      rec.barrier();
      norm(h, m.get(Weight::PostAttnNorm, l), h, E, T);
      rec.barrier();
      vk::ops::add(rec, P, x, h, x, T * E);
    } else {
      product(m.get(Weight::AttnOut, l), attn, x, T, /*accumulate=*/true, attn_q);
    }
    rec.barrier();
    mark("attn_out");

    const bool ffn_q8 =
        spec.fused_gate_up ? wants_q8({&m.get(Weight::FfnUp, l)}, E, T)
                           : wants_q8({m.find(Weight::FfnGate, l), m.find(Weight::FfnUp, l)}, E, T);
    const vk::BufferSlice fq = ffn_q8 ? xq : vk::BufferSlice{};
    norm(x, m.get(Weight::FfnNorm, l), h, E, T, fq);
    rec.barrier();
    mark("ffn_norm");
    vk::ops::GluArgs g;
    g.n = ff;
    g.n_rows = T;
    g.act = spec.activation == model::Activation::SiLU ? vk::ops::GluActivation::Silu
                                                       : vk::ops::GluActivation::GeluTanh;
    g.out = ffn_act;
    if (spec.fused_gate_up) {
      product(m.get(Weight::FfnUp, l), h, up, T, false, fq);
      g.gate = up;
      g.up = up.sub(uint64_t(ff) * 4, up.size - uint64_t(ff) * 4);
      g.gate_stride = g.up_stride = 2 * ff;
    } else {
      product(m.get(Weight::FfnGate, l), h, gate, T, false, fq);
      product(m.get(Weight::FfnUp, l), h, up, T, false, fq);
      g.gate = gate;
      g.up = up;
    }
    rec.barrier();
    mark("gate_up");
    const vk::BufferSlice act_q =
        wants_q8({&m.get(Weight::FfnDown, l)}, ff, T) ? xq : vk::BufferSlice{};
    g.q8 = act_q;
    vk::ops::glu(rec, P, g);
    rec.barrier();
    mark("glu");
    if (spec.post_norms) {
      product(m.get(Weight::FfnDown, l), ffn_act, h, T, false, act_q);
      rec.barrier();
      norm(h, m.get(Weight::PostFfnNorm, l), h, E, T);
      rec.barrier();
      vk::ops::add(rec, P, x, h, x, T * E);
    } else {
      product(m.get(Weight::FfnDown, l), ffn_act, x, T, /*accumulate=*/true, act_q);
    }
    rec.barrier();
    mark("down");
    marking = false;
  }
};

Runner::Runner(Model& model, const RunnerOptions& options)
    : model_(&model), options_(options), impl_(std::make_unique<Impl>(model, options)) {
  options_ = impl_->opt;
  if (options_.warm_up) warm_up();
}

Runner::~Runner() = default;

kv::BlockPool& Runner::pool() {
  return *impl_->pool;
}
uint64_t Runner::kv_bytes() const {
  return impl_->kv_arena->capacity();
}
uint64_t Runner::device_bytes() const {
  return model_->weight_bytes() + impl_->kv_arena->capacity() + impl_->act_bytes;
}

StepResult Runner::step(std::span<SequenceStep> batch, bool greedy_only) {
  return run_step(batch, greedy_only, /*hidden=*/false);
}

StepResult Runner::step_hidden(std::span<SequenceStep> batch) {
  return run_step(batch, /*greedy_only=*/false, /*hidden=*/true);
}

StepResult Runner::run_step(std::span<SequenceStep> batch, bool greedy_only, bool hidden) {
  Impl& I = *impl_;
  const auto& spec = model_->spec();
  if (batch.empty()) throw std::invalid_argument("Runner::step: empty batch");
  if (batch.size() > options_.max_seqs) {
    throw std::invalid_argument("Runner::step: " + std::to_string(batch.size()) +
                                " sequences exceed the limit of " +
                                std::to_string(options_.max_seqs));
  }
  uint32_t T = 0, R = 0;
  for (const auto& s : batch) {
    if (!s.table || s.tokens.empty()) throw std::invalid_argument("Runner::step: empty sequence");
    if (s.table->num_tokens() + s.tokens.size() > options_.max_context) {
      throw std::invalid_argument("Runner::step: sequence exceeds the context of " +
                                  std::to_string(options_.max_context) + " tokens");
    }
    T += static_cast<uint32_t>(s.tokens.size());
    R += s.logits == LogitsWanted::All    ? static_cast<uint32_t>(s.tokens.size())
         : s.logits == LogitsWanted::Last ? 1
                                          : 0;
  }
  if (T > options_.max_batch_tokens) {
    throw std::invalid_argument("Runner::step: " + std::to_string(T) +
                                " tokens exceed the limit of " +
                                std::to_string(options_.max_batch_tokens));
  }
  if (R > I.max_rows) {
    throw std::invalid_argument("Runner::step: " + std::to_string(R) +
                                " logits rows exceed the limit of " + std::to_string(I.max_rows));
  }
  // Blocks for the new tokens; all or nothing across the batch.
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].table->reserve(static_cast<uint32_t>(batch[i].tokens.size()))) {
      for (size_t j = 0; j < i; ++j) batch[j].table->trim_reserved();
      throw std::runtime_error("KV cache is full: no free blocks for this step");
    }
  }

  // Step inputs: token ids, rows that produce logits, batch metadata.
  std::vector<kv::BatchSequence> seqs;
  seqs.reserve(batch.size());
  auto* ids = reinterpret_cast<uint32_t*>(I.ids_in.mapped());
  auto* sel = reinterpret_cast<uint32_t*>(I.sel_in.mapped());
  uint32_t t = 0, r = 0;
  std::vector<uint32_t> last_row(batch.size(), UINT32_MAX);
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& s = batch[i];
    const uint32_t n = static_cast<uint32_t>(s.tokens.size());
    seqs.push_back({std::span<const uint32_t>(s.table->blocks().data(), s.table->blocks().size()),
                    n, s.table->num_tokens() + n});
    for (uint32_t j = 0; j < n; ++j) {
      const int32_t tok = s.tokens[j];
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
  if (meta.words.size() > I.max_meta_words) throw std::logic_error("batch metadata overflow");
  std::memcpy(I.meta_in.mapped(), meta.words.data(), meta.words.size() * 4);
  const vk::ops::BatchInfo binfo{I.meta_in.slice(), meta.n_tokens, meta.n_seqs};

  auto& P = I.ctx.pipelines();
  auto& rec = I.rec;
  rec.begin();
  rec.timestamp("start");
  {
    vk::ops::GetRowsArgs g;
    g.ids = I.ids_in.slice();
    g.n_tokens = T;
    g.out = I.x;
    g.scale = spec.embed_scale;
    record_get_rows(rec, P, model_->get(Weight::TokenEmbd), g);
  }
  rec.barrier();
  // The device starts on the first layer while the host records the rest, in about step_parts
  // parts.
  const uint32_t layers_per_part =
      std::max<uint32_t>(1, spec.n_layer / std::max<uint32_t>(1, options_.step_parts));
  for (uint32_t l = 0; l < spec.n_layer; ++l) {
    I.record_layer(l, T, binfo, meta.max_q_len, meta.max_kv_len);
    const bool boundary = l == 0 || (l + 1) % layers_per_part == 0;
    if (options_.step_parts > 1 && boundary && l + 1 < spec.n_layer) rec.flush();
  }
  rec.timestamp("layers");
  StepResult result;
  result.logits.resize(batch.size());
  result.greedy.assign(batch.size(), -1);
  // The final norm writes the q8 copy the output matrix's int8-dot product reads.
  const vk::BufferSlice hq = R > 0 && !hidden && I.wants_q8({&model_->output()}, spec.n_embd, R)
                                 ? I.xq
                                 : vk::BufferSlice{};
  if (R > 0) {
    // Only the rows that produce logits go through the final norm and the output matrix.
    vk::ops::GetRowsArgs g;
    g.type = "f32";
    g.weights = I.x;
    g.row_elems = spec.n_embd;
    g.row_bytes = spec.n_embd * 4;
    g.n_rows = T;
    g.ids = I.sel_in.slice();
    g.n_tokens = R;
    g.out = I.xsel;
    vk::ops::get_rows(rec, P, g);
    rec.barrier();
    I.norm(I.xsel, model_->get(Weight::OutputNorm), I.hsel, spec.n_embd, R, hq);
    rec.barrier();
    if (hidden)
      rec.copy(I.hsel.sub(0, R * spec.n_embd * 4ull), I.readback.slice(0, R * spec.n_embd * 4ull));
  }
  if (R > 0 && !hidden) {
    I.product(model_->output(), I.hsel, I.logits, R, false, hq);
    rec.barrier();
    if (spec.final_softcap > 0) {
      vk::ops::softcap(rec, P, I.logits, I.logits, R * spec.n_vocab, spec.final_softcap);
      rec.barrier();
    }
    vk::ops::argmax(rec, P, I.logits, I.greedy, spec.n_vocab, R, 0, I.argmax_scratch);
    rec.barrier();
    const uint64_t logit_bytes = uint64_t(R) * spec.n_vocab * 4;
    if (!greedy_only) rec.copy(I.logits.sub(0, logit_bytes), I.readback.slice(0, logit_bytes));
    const uint64_t greedy_at = uint64_t(I.max_rows) * spec.n_vocab * 4;
    rec.copy(I.greedy.sub(0, 4ull * R), I.readback.slice(greedy_at, 4ull * R));
  }
  rec.timestamp("output");
  rec.submit_and_wait();

  if (R > 0 && hidden) {
    const float* hs = reinterpret_cast<const float*>(I.readback.mapped());
    result.hidden.resize(batch.size());
    uint32_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const auto& s = batch[i];
      const uint32_t rows = s.logits == LogitsWanted::All ? static_cast<uint32_t>(s.tokens.size())
                            : s.logits == LogitsWanted::Last ? 1
                                                             : 0;
      result.hidden[i].assign(hs + uint64_t(row) * spec.n_embd,
                              hs + uint64_t(row + rows) * spec.n_embd);
      row += rows;
    }
  }
  if (R > 0 && !hidden) {
    const float* lg = reinterpret_cast<const float*>(I.readback.mapped());
    const uint32_t* gr = reinterpret_cast<const uint32_t*>(I.readback.mapped() +
                                                           uint64_t(I.max_rows) * spec.n_vocab * 4);
    uint32_t row = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      const auto& s = batch[i];
      const uint32_t rows = s.logits == LogitsWanted::All ? static_cast<uint32_t>(s.tokens.size())
                            : s.logits == LogitsWanted::Last ? 1
                                                             : 0;
      if (rows == 0) continue;
      if (!greedy_only) {
        result.logits[i].assign(lg + uint64_t(row) * spec.n_vocab,
                                lg + uint64_t(row + rows) * spec.n_vocab);
      }
      result.greedy[i] = static_cast<int32_t>(gr[last_row[i]]);
      row += rows;
    }
  }
  for (auto& s : batch) s.table->commit(s.tokens);
  return result;
}

size_t Runner::warm_up() {
  auto& P = impl_->ctx.pipelines();
  const uint64_t before = P.stats().created;
  std::vector<vk::PipelineDesc> descs;
  {
    vk::PipelineCache::Collector collect(P);
    impl_->rec.set_dry(true);
    struct Wet {
      vk::CommandRecorder& rec;
      ~Wet() { rec.set_dry(false); }
    } wet{impl_->rec};
    // Dry steps on throwaway tables: their blocks never reach the real pool's prefix cache.
    const uint32_t bs = options_.block_size;
    kv::BlockPool scratch(options_.max_context / bs + 2);
    const uint32_t big = std::min(options_.max_batch_tokens, options_.max_context);
    const std::vector<int32_t> zeros(big, 0);
    auto dry_step = [&](kv::BlockTable& table, uint32_t n, LogitsWanted logits) {
      SequenceStep s{&table, std::span(zeros).first(n), logits};
      step(std::span(&s, 1), /*greedy_only=*/true);
    };
    auto fresh_step = [&](uint32_t n) {
      kv::BlockTable table(scratch, bs);
      dry_step(table, n, n <= options_.max_logits_rows ? LogitsWanted::All : LogitsWanted::Last);
    };
    // Query lengths up to 16 pick the attention's rows per workgroup; 1 and 2.. the matvec
    // widths; above matvec_max_batch the GEMM; the logits rows the output product's kernel.
    const auto& spec = model_->spec();
    const uint32_t ratio = std::max(1u, spec.n_head / std::max(1u, spec.n_head_kv));
    const uint32_t short_max = std::min(big, std::max(2u, 16 / ratio));
    for (uint32_t n = 1; n <= short_max; ++n) fresh_step(n);
    for (uint32_t n : {big, std::min(big, options_.max_logits_rows),
                       std::min(big, options_.matvec_max_batch + 1)})
      fresh_step(n);
    // Decode after a long context: split-K attention and its reduction.
    kv::BlockTable table(scratch, bs);
    const uint32_t long_context = std::min(options_.max_context - 1, 320u);
    while (table.num_tokens() < long_context)
      dry_step(table, std::min(big, long_context - table.num_tokens()), LogitsWanted::None);
    dry_step(table, 1, LogitsWanted::Last);
    descs = collect.descs();
  }
  P.build(descs);
  const uint64_t created = P.stats().created - before;
  if (created > 0) P.save();
  return created;
}

std::vector<std::pair<std::string, double>> Runner::last_step_timings() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& t : impl_->rec.timings()) out.emplace_back(t.label, t.ms);
  return out;
}

}  // namespace vkllm::runtime
