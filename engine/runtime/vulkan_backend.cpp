#include "engine/runtime/vulkan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/runtime/vulkan_backend_impl.h"
#include "engine/runtime/weight_ops.h"
#include "engine/vulkan/attention.h"

namespace vkllm::runtime {

namespace {

// The device's matmul tuning with the runner's int8-dot choice (RunnerOptions::int8_dot).
vk::MatmulTuning matmul_tuning(const vk::KernelTuning& tuning, const RunnerOptions& o) {
  vk::MatmulTuning t = tuning.matmul;
  t.int8_dot = o.int8_dot;
  return t;
}

}  // namespace

namespace detail {

using model::Weight;

VulkanBackend::VulkanBackend(const Model& model, RunnerOptions& o)
    : ctx_(model.context()),
      m_(model),
      spec_(model.spec()),
      mem_(ctx_, model, o),
      opt_(mem_.opt),
      matmul_(ctx_.pipelines(), matmul_tuning(ctx_.device().tuning(), o)),
      recs_{std::make_unique<vk::CommandRecorder>(ctx_.device()),
            std::make_unique<vk::CommandRecorder>(ctx_.device())},
      rec_(recs_[0].get()) {
  // Devices that do not report their compute units get a middling guess for split-K.
  compute_units_ = ctx_.caps().compute_units ? ctx_.caps().compute_units : 16;
  if (spec_.is_moe()) check_moe_weights();
  check_attention_shapes();
}

void VulkanBackend::check_attention_shapes() const {
  for (uint32_t l = m_.layers().first; l < m_.layers().end; ++l) {
    if (spec_.is_recurrent(l)) continue;
    const uint32_t n_kv = spec_.n_head_kv_of(spec_.kv_layer(l));
    if (n_kv == 0 || spec_.n_head % n_kv != 0) continue;  // attention() names that itself
    const std::string why =
        vk::ops::attention_unsupported(spec_.head_dim_of(l), spec_.n_head / n_kv, ctx_.caps());
    if (!why.empty()) {
      throw std::runtime_error("the Vulkan device cannot run layer " + std::to_string(l) +
                               "'s attention: " + why);
    }
  }
}

void VulkanBackend::embed(WeightRef table, Rows out, uint32_t n_tokens, float scale) {
  vk::ops::GetRowsArgs g;
  g.ids = mem_.ids_in.slice();
  g.n_tokens = n_tokens;
  g.out = mem_.slice(out);
  g.out_stride = out.stride;  // Gemma 3n: the embedding is stream 0 of each token's AltUp group
  g.scale = scale;
  record_get_rows(*rec_, ctx_.pipelines(), get(table), g);
  wrote(out.act);
}

void VulkanBackend::set_injected_rows(std::span<const InjectedRows> rows) {
  if (!mem_.rows_in.mapped())
    throw std::invalid_argument("this Vulkan backend takes no embedding rows as step inputs");
  // Each span's rows slice by slice (n_embd, then the deepstack slices), so that every slice's
  // rows are one contiguous copy or add.
  const uint64_t row_bytes = uint64_t(spec_.n_embd) * 4;
  const uint32_t slices = 1 + spec_.n_deepstack;
  uint64_t at = 0;
  injected_.clear();
  for (const InjectedRows& r : rows) {
    const uint64_t bytes = r.n * row_bytes * slices;
    if (at + bytes > mem_.rows_in.size())
      throw std::invalid_argument("embedding rows beyond the step's tokens");
    std::byte* to = mem_.rows_in.mapped() + at;
    if (slices == 1) {
      std::memcpy(to, r.data, bytes);
    } else {
      for (uint32_t i = 0; i < r.n; ++i)
        for (uint32_t s = 0; s < slices; ++s)
          std::memcpy(to + (uint64_t(s) * r.n + i) * row_bytes,
                      r.data + (uint64_t(i) * slices + s) * spec_.n_embd, row_bytes);
    }
    injected_.push_back({r.row, r.n, at});
    at += bytes;
  }
}

void VulkanBackend::inject_rows(Rows x, uint32_t n) {
  if (x.stride != 0 && x.stride != n) throw std::logic_error("inject_rows: packed rows only");
  const uint64_t row_bytes = uint64_t(n) * 4;
  vk::BufferSlice dst = mem_.slice(x);
  for (const auto& r : injected_)
    rec_->copy(mem_.rows_in.slice(r.offset, r.n * row_bytes),
               dst.sub(r.row * row_bytes, r.n * row_bytes));
  wrote(x.act);
}

void VulkanBackend::add_injected_slice(Rows x, uint32_t n, uint32_t slice) {
  if (x.stride != 0 && x.stride != n)
    throw std::logic_error("add_injected_slice: packed rows only");
  const uint64_t row_bytes = uint64_t(n) * 4;
  vk::BufferSlice rows = mem_.slice(x);
  for (const auto& r : injected_) {
    const vk::BufferSlice to = rows.sub(r.row * row_bytes, r.n * row_bytes);
    vk::ops::add(*rec_, ctx_.pipelines(), to,
                 mem_.rows_in.slice(r.offset + uint64_t(slice) * r.n * row_bytes, r.n * row_bytes),
                 to, r.n * n);
  }
  wrote(x.act);
}

void VulkanBackend::add_bias(WeightRef bias, Rows x, uint32_t n, uint32_t rows) {
  const DeviceTensor* b = find(bias);
  if (!b) return;
  struct {
    uint32_t n, n_rows, stride, off;
  } push{n, rows, x.stride ? x.stride : n, x.off};
  const auto& p = ctx_.pipelines().get(
      {.shader = "add_bias", .num_buffers = 2, .push_constant_bytes = 16, .spec = {64}});
  rec_->dispatch(p, {mem_.buf(x.act), b->data}, push, {vk::div_up(n, 64), rows, 1});
  wrote(x.act);
}

void VulkanBackend::add(Rows a, Rows b, Rows out, uint64_t n) {
  vk::ops::add(*rec_, ctx_.pipelines(), mem_.slice(a), mem_.slice(b), mem_.slice(out),
               static_cast<uint32_t>(n));
  wrote(out.act);
}

void VulkanBackend::rope(const RopeSpec& rope, Rows x, uint32_t n_heads) {
  const vk::ops::RopeParams p = rope_params(rope);
  vk::ops::rope(*rec_, ctx_.pipelines(), p, batch_, mem_.head_rows(x), mem_.head_rows(x), n_heads);
  wrote(x.act);
}

void VulkanBackend::write_kv(uint32_t layer, bool value, const RopeSpec* rope, Rows src) {
  std::optional<vk::ops::RopeParams> p;
  if (rope) p = rope_params(*rope);
  write_kv_rows(layer, value, p ? &*p : nullptr, mem_.head_rows(src));
}

void VulkanBackend::write_kv_rows(uint32_t layer, bool value, const vk::ops::RopeParams* rope,
                                  const vk::ops::HeadRows& src, const vk::ops::HeadNorm* norm) {
  // Layers may differ in head size and count (Gemma 4): each writes its region as its own.
  const vk::ops::CacheRegion region{(value ? mem_.v_region : mem_.k_region)[layer],
                                    spec_.n_head_kv_of(layer), opt_.block_size, opt_.kv_cache_type};
  vk::ops::write_kv(*rec_, ctx_.pipelines(), rope, batch_, src, spec_.head_dim_of(layer), region,
                    norm);
}

void VulkanBackend::norm_rope_kv(const NormRopeKv& s) {
  const vk::ops::HeadNorm qn{get(s.q_norm).data, spec_.norm_eps};
  const vk::ops::RopeParams qp = rope_params(s.rope_q);
  vk::ops::rope(*rec_, ctx_.pipelines(), qp, batch_, mem_.head_rows(s.q), mem_.head_rows(s.q),
                s.n_q_heads, &qn);
  wrote(s.q.act);
  if (!s.kv) return;
  const vk::ops::HeadNorm kn{get(s.k_norm).data, spec_.norm_eps};
  std::optional<vk::ops::RopeParams> kp;
  if (s.rope_k) kp = rope_params(*s.rope_k);
  write_kv_rows(s.layer, /*value=*/false, kp ? &*kp : nullptr, mem_.head_rows(s.k), &kn);
  const vk::ops::HeadNorm vn{{}, spec_.norm_eps};
  write_kv_rows(s.layer, /*value=*/true, nullptr, mem_.head_rows(s.v), s.v_norm ? &vn : nullptr);
}

void VulkanBackend::attention(const AttentionSpec& s) {
  // The heads of the cache this layer reads (a shared layer: the one that wrote it).
  const uint32_t nkv = spec_.n_head_kv_of(spec_.kv_layer(s.layer));
  vk::ops::AttentionArgs at;
  at.q = mem_.head_rows(s.q);
  at.k_cache = {mem_.k_region[s.layer], nkv, opt_.block_size, opt_.kv_cache_type};
  at.v_cache = {mem_.v_region[s.layer], nkv, opt_.block_size, opt_.kv_cache_type};
  at.batch = batch_;
  at.max_q_len = max_q_len_;
  at.max_kv_len = max_kv_len_;
  at.out = mem_.head_rows(s.out);
  at.n_q_heads = s.n_q_heads;
  at.head_dim = s.head_dim;
  at.scale = s.scale;
  at.softcap = s.softcap;
  at.window = s.window;
  at.chunk = s.chunk;
  at.causal = s.causal;
  at.open_span = s.open_span;
  if (s.sinks) at.sinks = get({Weight::AttnSinks, s.layer}).data;
  at.n_splits = 1;
  if (s.causal && batch_.n_tokens <= kMaxSplitTokens) {
    at.n_splits = std::min({kMaxAttentionSplits, kAttentionSplitRows / batch_.n_tokens,
                            vk::ops::attention_suggested_splits(
                                max_kv_len_, batch_.n_tokens, nkv, compute_units_,
                                ctx_.device().tuning().attn_split_target, s.head_dim)});
    at.scratch = mem_.scratch;
  } else if (s.causal && batch_.n_tokens <= kAttentionSplitRows / 2) {
    // Prefill after a long context: few query tiles, each walking the whole context.
    at.n_splits = std::min(kAttentionSplitRows / batch_.n_tokens,
                           vk::ops::attention_prefill_splits(
                               max_kv_len_, max_q_len_, batch_.n_seqs, nkv, s.n_q_heads / nkv,
                               compute_units_, ctx_.device().tuning().attn_split_target));
    at.scratch = mem_.scratch;
  }
  const uint32_t width = s.n_q_heads * s.head_dim;
  // The output projection's int8-dot matvec takes the q8 copy the attention kernel or its
  // split-K reduction writes (a separate quantize pass lost: bench/results/HISTORY.md, Eighth
  // session).
  if (wants_q8(s.feeds, width, batch_.n_tokens))
    at.q8 = mem_.xq;
  else if (wants_f16(s.feeds, width, batch_.n_tokens))
    at.f16 = f16_rows(batch_.n_tokens, width);
  const bool q8 = vk::ops::attention_writes_q8(at);
  const bool f16 = vk::ops::attention_writes_f16(at, ctx_.caps());
  vk::ops::attention(*rec_, ctx_.pipelines(), at);
  wrote(s.out.act);
  if (q8) q8_of_ = Q8Copy{s.out.act, batch_.n_tokens, mem_.xq};
  if (f16) f16_of_ = F16Copy{s.out.act, batch_.n_tokens};
}

void VulkanBackend::select_rows(Rows from, Rows to, uint32_t n, uint32_t n_sel) {
  vk::ops::GetRowsArgs g;
  g.type = "f32";
  g.weights = mem_.slice(from);
  g.row_elems = n;
  g.row_bytes = n * 4;
  g.n_rows = batch_.n_tokens;
  g.ids = mem_.sel_in.slice();
  g.n_tokens = n_sel;
  g.out = mem_.slice(to);
  vk::ops::get_rows(*rec_, ctx_.pipelines(), g);
  wrote(to.act);
}

void VulkanBackend::short_conv(const ShortConvSpec& c) {
  const kv::StateLayout& st = mem_.state_layout;
  if (!st.has(c.layer)) throw std::logic_error("short_conv: layer without recurrent state");
  vk::ops::ShortConvArgs a;
  a.bcx = mem_.slice(c.bcx);
  a.taps = get({Weight::ShortConvConv, c.layer}).data;
  a.states = mem_.states.slice();
  a.out = mem_.slice(c.out);
  a.n_embd = c.n_embd;
  a.l_cache = c.l_cache;
  a.bcx_stride = c.bcx.stride;
  a.out_stride = c.out.stride;
  a.slot_floats = static_cast<uint32_t>(st.slot_floats);
  a.layer_offset = static_cast<uint32_t>(st.layer_offset[c.layer]);
  const bool q8 = wants_q8(c.feeds, c.n_embd, batch_.n_tokens);
  if (q8) a.q8 = mem_.xq;
  a.max_q_len = max_q_len_;
  vk::ops::short_conv(*rec_, ctx_.pipelines(), batch_, a);
  wrote(c.out.act);
  if (q8) q8_of_ = Q8Copy{c.out.act, batch_.n_tokens, mem_.xq};
}

void VulkanBackend::softcap(Rows x, uint64_t n, float cap) {
  vk::ops::softcap(*rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(x), static_cast<uint32_t>(n),
                   cap);
  wrote(x.act);
}

void VulkanBackend::argmax(Rows logits, uint32_t n, uint32_t rows) {
  vk::ops::argmax(*rec_, ctx_.pipelines(), mem_.slice(logits), mem_.greedy, n, rows, logits.stride,
                  mem_.argmax_scratch);
}

void VulkanBackend::begin_layer(uint32_t layer) {
  marking_ = opt_.profile && layer == opt_.profile_layer;
  mark("layer_begin");
}

void VulkanBackend::end_layer(uint32_t layer) {
  marking_ = false;
  const uint32_t layers_per_part =
      std::max<uint32_t>(1, spec_.n_layer / std::max<uint32_t>(1, opt_.step_parts));
  const bool boundary = layer == 0 || (layer + 1) % layers_per_part == 0;
  // A step recorded ahead is submitted whole: parts would only add their boundaries (on an H100
  // a 1B Q4_K_M step in one part took 1.152 ms of GPU time against 1.185 in eight).
  if (opt_.step_parts > 1 && boundary && layer + 1 < spec_.n_layer && !recording_ahead_)
    rec_->flush();
}

void VulkanBackend::embed_positions(WeightRef table, Rows out, uint32_t n_tokens) {
  vk::ops::GetRowsArgs g;
  g.ids = mem_.pos_in.slice();
  g.n_tokens = n_tokens;
  g.out = mem_.slice(out);
  record_get_rows(*rec_, ctx_.pipelines(), get(table), g);
  wrote(out.act);
}

void VulkanBackend::embed_row(WeightRef table, uint32_t row, Rows out) {
  if (n_row_ids_ == VulkanStepBuffers::kMaxRowIds)
    throw std::logic_error("embed_row: too many rows in one step");
  const uint64_t at = uint64_t(VulkanStepBuffers::kRowIdSpacing) * n_row_ids_++;
  // The id is written as the step is recorded: ahead of its turn, the running step may still
  // read it, so such a recording is never taken.
  if (recording_ahead_)
    ahead_broken_ = true;
  else
    std::memcpy(mem_.row_ids.mapped() + at, &row, 4);
  vk::ops::GetRowsArgs g;
  g.ids = mem_.row_ids.slice(at, 4);
  g.n_tokens = 1;
  g.out = mem_.slice(out);
  record_get_rows(*rec_, ctx_.pipelines(), get(table), g);
  wrote(out.act);
}

void VulkanBackend::add_row(Rows row, Rows x, uint32_t n, uint32_t rows) {
  vk::ops::add_bias(*rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(row), n, rows);
  wrote(x.act);
}

void VulkanBackend::layer_norm(Rows x, WeightRef w, WeightRef b, Rows y, uint32_t n,
                               uint32_t rows) {
  vk::ops::LayerNormArgs a;
  a.x = mem_.slice(x);
  a.y = mem_.slice(y);
  a.weight = get(w).data;
  a.bias = get(b).data;
  a.n = n;
  a.n_rows = rows;
  a.eps = spec_.norm_eps;
  vk::ops::layer_norm(*rec_, ctx_.pipelines(), a);
  wrote(y.act);
}

void VulkanBackend::gelu(Rows x, Rows out, uint64_t n) {
  vk::ops::gelu(*rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(out), static_cast<uint32_t>(n));
  wrote(out.act);
}

void VulkanBackend::tanh(Rows x, Rows out, uint64_t n, float in_scale) {
  vk::ops::tanh(*rec_, ctx_.pipelines(), mem_.slice(x), mem_.slice(out), static_cast<uint32_t>(n),
                in_scale);
  wrote(out.act);
}

void VulkanBackend::pool(PoolMode mode, Rows x, uint32_t n, Rows out) {
  const vk::ops::PoolMode m = mode == PoolMode::Mean    ? vk::ops::PoolMode::Mean
                              : mode == PoolMode::First ? vk::ops::PoolMode::First
                                                        : vk::ops::PoolMode::Last;
  vk::ops::pool_rows(*rec_, ctx_.pipelines(), m, batch_, mem_.slice(x), n, mem_.slice(out));
  wrote(out.act);
}

void VulkanBackend::copy(Rows from, Rows to, uint64_t n) {
  rec_->copy(mem_.slice(from).sub(0, n * 4), mem_.slice(to));
  wrote(to.act);
}

void VulkanBackend::write_inputs(const kv::BatchMeta& meta) {
  if (meta.words.size() > mem_.max_meta_words) throw std::logic_error("batch metadata overflow");
  std::memcpy(mem_.meta_in.mapped(), meta.words.data(), meta.words.size() * 4);
  if (spec_.position_embd) {  // the positions, as ids of learned position rows
    std::memcpy(mem_.pos_in.mapped(), meta.words.data() + meta.n_tokens, meta.n_tokens * 4ull);
  }
}

void VulkanBackend::start_recording(uint32_t n_tokens, uint32_t n_seqs, uint32_t max_q_len,
                                    uint32_t max_kv_len, bool ahead) {
  rec_ = &other(submitted_);
  batch_ = {mem_.meta_in.slice(), n_tokens, n_seqs};
  max_q_len_ = max_q_len;
  max_kv_len_ = max_kv_len;
  q8_of_.reset();
  f16_of_.reset();
  normalized_.reset();
  n_row_ids_ = 0;
  rec_->begin(ahead);
  rec_->timestamp("start");
}

void VulkanBackend::begin_step(const kv::BatchMeta& meta) {
  ahead_.reset();  // its recorder is recorded into now
  write_inputs(meta);
  start_recording(meta.n_tokens, meta.n_seqs, meta.max_q_len, meta.max_kv_len, false);
  batch_.captures = meta.captures;
}

void VulkanBackend::record_outputs(const StepOutputs& out, uint32_t R) {
  if (out.hidden) {
    const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
    rec_->copy(mem_.hsel.sub(0, bytes), mem_.readback.slice(0, bytes));
  }
  if (out.logits) {
    const uint64_t bytes = uint64_t(R) * spec_.n_vocab * 4;
    rec_->copy(mem_.logits.sub(0, bytes), mem_.readback.slice(0, bytes));
  }
  if (out.pooled) {
    const uint64_t bytes = uint64_t(R) * spec_.n_embd_out() * 4;
    rec_->copy(mem_.logits.sub(0, bytes), mem_.readback.slice(0, bytes));
  }
  if (out.token_states) {
    const uint64_t bytes = uint64_t(R) * spec_.n_embd * 4;
    rec_->copy(mem_.x.sub(0, bytes), mem_.readback.slice(0, bytes));
  }
  if (out.token_hidden) {
    if (mem_.token_readback.size() == 0)
      throw std::logic_error("token_hidden without RunnerOptions::token_hidden");
    const uint64_t bytes = uint64_t(batch_.n_tokens) * spec_.n_embd * 4;
    rec_->copy(mem_.h.sub(0, bytes), mem_.token_readback.slice(0, bytes));
  }
  if (out.greedy)
    rec_->copy(mem_.greedy.sub(0, 4ull * R), mem_.readback.slice(mem_.greedy_at(), 4ull * R));
  rec_->timestamp("output");
}

void VulkanBackend::submit_step(const StepOutputs& out, uint32_t R) {
  // A recording taken from ahead is finished, its outputs recorded already.
  if (!rec_->finished()) record_outputs(out, R);
  rec_->submit();
  submitted_ = rec_;
}

void VulkanBackend::wait_step() {
  if (submitted_) submitted_->wait();
}

void VulkanBackend::end_step(const StepOutputs& out, uint32_t R) {
  submit_step(out, R);
  wait_step();
}

void VulkanBackend::begin_ahead(const StepKey& key) {
  ahead_.reset();
  recording_ahead_ = true;
  ahead_broken_ = false;
  start_recording(key.n_tokens, key.n_seqs, key.max_q_len, key.max_kv_len, true);
  ahead_ = key;
}

void VulkanBackend::end_ahead() {
  record_outputs(ahead_->out, ahead_->n_rows);
  rec_->finish();
  recording_ahead_ = false;
  if (ahead_broken_) ahead_.reset();
}

void VulkanBackend::drop_ahead() {
  recording_ahead_ = false;
  ahead_.reset();
}

bool VulkanBackend::take_ahead(const kv::BatchMeta& meta, const StepKey& key) {
  const bool match = ahead_ && *ahead_ == key;
  ahead_.reset();
  if (!match) return false;
  write_inputs(meta);
  rec_ = &other(submitted_);
  return true;
}

void VulkanBackend::begin_stage(const kv::BatchMeta& meta, Rows x, const float* data, uint64_t n) {
  if (!mem_.stage_in.mapped() || n * 4 > mem_.stage_in.size())
    throw std::logic_error("begin_stage: this backend is not a stage after the first");
  begin_step(meta);
  std::memcpy(mem_.stage_in.mapped(), data, n * 4);
  rec_->copy(mem_.stage_in.slice(0, n * 4), mem_.slice(x));
  rec_->barrier();
  wrote(x.act);
}

void VulkanBackend::submit_stage(Rows x, uint64_t n) {
  if (!mem_.stage_out.mapped() || n * 4 > mem_.stage_out.size())
    throw std::logic_error("end_stage: this backend is not a stage before the last");
  rec_->copy(mem_.slice(x).sub(0, n * 4), mem_.stage_out.slice(0, n * 4));
  submit_step({}, 0);
}

const float* VulkanBackend::wait_stage() {
  wait_step();
  return reinterpret_cast<const float*>(mem_.stage_out.mapped());
}

size_t VulkanBackend::warm_up(const std::function<void()>& dry_steps) {
  auto& P = ctx_.pipelines();
  const uint64_t before = P.stats().created;
  std::vector<vk::PipelineDesc> descs;
  {
    vk::PipelineCache::Collector collect(P);
    for (auto& r : recs_) r->set_dry(true);
    struct Wet {
      std::array<std::unique_ptr<vk::CommandRecorder>, 2>& recs;
      ~Wet() {
        for (auto& r : recs) r->set_dry(false);
      }
    } wet{recs_};
    dry_steps();
    descs = collect.descs();
  }
  P.build(descs);
  const uint64_t created = P.stats().created - before;
  if (created > 0) P.save();
  return created;
}

std::vector<std::pair<std::string, double>> VulkanBackend::timings() const {
  std::vector<std::pair<std::string, double>> out;
  if (submitted_)
    for (const auto& t : submitted_->timings()) out.emplace_back(t.label, t.ms);
  return out;
}

vk::ops::RopeParams VulkanBackend::rope_params(const RopeSpec& r) const {
  vk::ops::RopeParams p;
  p.head_dim = r.head_dim;
  p.n_dims = r.n_dims;
  p.neox = r.neox;
  p.freq_base = r.freq_base;
  p.freq_scale = r.freq_scale;
  p.temp_scale = r.temp_scale;
  p.temp_floor = r.temp_floor;
  p.temp_offset = r.temp_offset;
  p.rotate = r.rotate;
  if (r.freq_factors)
    if (const auto* f = m_.find(Weight::RopeFreqs)) p.freq_factors = f->data;
  if (mem_.rope_pos_in.handle()) {
    p.mrope_sections = r.mrope_sections;
    p.mrope_interleaved = r.mrope_interleaved;
    p.mrope_pos = mem_.rope_pos_in.slice();
  }
  return p;
}

}  // namespace detail

std::unique_ptr<StepBackend> make_vulkan_backend(const Model& model, RunnerOptions& opt) {
  return std::make_unique<detail::VulkanBackend>(model, opt);
}

}  // namespace vkllm::runtime
