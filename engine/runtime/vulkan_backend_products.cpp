// The Vulkan backend's weight products: the decode kernel or the GEMM per product, the q8 copies
// of their inputs (written by the norm or activation before them where it can, else quantized
// here), and the decode epilogues fused into them (norm, GLU, RoPE with the KV write).
#include <algorithm>
#include <stdexcept>

#include "engine/runtime/vulkan_backend_impl.h"
#include "engine/runtime/weight_ops.h"

namespace vkllm::runtime::detail {

vk::ops::RmsNormArgs VulkanBackend::norm_rows(Rows x, Rows y, uint32_t n, uint32_t rows) {
  vk::ops::RmsNormArgs a;
  a.x = mem_.slice(x);
  a.y = mem_.slice(y);
  a.n = n;
  a.n_rows = rows;
  a.x_stride = x.stride;
  a.y_stride = y.stride;
  a.eps = spec_.norm_eps;
  return a;
}

void VulkanBackend::norm_copies(vk::ops::RmsNormArgs& a, Rows y, std::span<const WeightRef> feeds,
                                uint32_t n, uint32_t rows) {
  const bool q8 = wants_q8(feeds, n, rows);
  const bool f16 = !q8 && (y.stride == 0 || y.stride == n) && y.off == 0 &&
                   vk::ops::rms_norm_writes_f16(n, ctx_.caps()) && wants_f16(feeds, n, rows);
  a.q8 = q8 ? mem_.xq : vk::BufferSlice{};
  a.f16 = f16 ? f16_rows(rows, n) : vk::BufferSlice{};
}

void VulkanBackend::record_norm(const vk::ops::RmsNormArgs& a, Act y, uint32_t rows) {
  vk::ops::rms_norm(*rec_, ctx_.pipelines(), a);
  wrote(y);
  if (a.q8) q8_of_ = Q8Copy{y, rows, mem_.xq};
  if (a.f16) f16_of_ = F16Copy{y, rows};
}

void VulkanBackend::rms_norm(Rows x, WeightRef w, Rows y, uint32_t n, uint32_t rows,
                             std::span<const WeightRef> feeds) {
  vk::ops::RmsNormArgs a = norm_rows(x, y, n, rows);
  a.weight = get(w).data;
  norm_copies(a, y, feeds, n, rows);
  record_norm(a, y.act, rows);
}

void VulkanBackend::rms_norm_add(Rows x, WeightRef w, Rows r, Rows y, uint32_t n, uint32_t rows,
                                 std::span<const WeightRef> feeds) {
  const uint32_t xs = x.stride ? x.stride : n, rs = r.stride ? r.stride : n;
  const uint32_t ys = y.stride ? y.stride : n;
  // The kernel reads r at x's offsets: the same row stride, and y's rows 16-byte aligned.
  if (xs != rs || xs % 4 != 0 || ys % 4 != 0 || x.off % 4 != 0 || r.off % 4 != 0 ||
      y.off % 4 != 0 || !vk::ops::rms_norm_fuses_gate(n, 0, 0, ctx_.caps())) {
    StepBackend::rms_norm_add(x, w, r, y, n, rows, feeds);
    return;
  }
  const bool q8 = ys == n && y.off == 0 && wants_q8(feeds, n, rows);
  vk::ops::RmsNormArgs a = norm_rows(x, y, n, rows);
  a.weight = get(w).data;
  a.post_add = mem_.slice(r);
  a.q8 = q8 ? mem_.xq : vk::BufferSlice{};
  record_norm(a, y.act, rows);
}

void VulkanBackend::rms_norm_add_norm(Rows x, WeightRef w, Rows r, const WeightRef* scale,
                                      const NormAfter& next, uint32_t rows) {
  const uint32_t n = next.n;
  const auto dense = [n](Rows v) { return (v.stride == 0 || v.stride == n) && v.off == 0; };
  // One dispatch where the rows fit the register-blocked kernel and all four are dense.
  if (!dense(x) || !dense(r) || !dense(next.x) || !dense(next.y) || next.x.act != r.act ||
      !vk::ops::rms_norm_fuses_gate(n, 0, 0, ctx_.caps())) {
    StepBackend::rms_norm_add_norm(x, w, r, scale, next, rows);
    return;
  }
  vk::ops::RmsNormArgs a = norm_rows(x, r, n, rows);
  a.weight = get(w).data;
  a.post_add = mem_.slice(r);
  a.next_weight = get(next.w).data;
  a.next_y = mem_.slice(next.y);
  if (scale) a.scale = get(*scale).data;
  norm_copies(a, next.y, next.feeds, n, rows);
  wrote(r.act);
  record_norm(a, next.y.act, rows);
}

void VulkanBackend::products(Rows x, uint32_t n, std::span<const ProductOut> outs) {
  WeightRef weights[4];
  if (outs.empty() || outs.size() > 4) throw std::logic_error("products: 1 to 4 outputs");
  const size_t n_weights = outs.size();
  for (size_t i = 0; i < n_weights; ++i) weights[i] = outs[i].w;
  const uint32_t cols = static_cast<uint32_t>(get(outs.front().w).cols());
  vk::BufferSlice in_q8;
  if (wants_q8(std::span<const WeightRef>(weights, n_weights), cols, n))
    in_q8 = q8_input(x, cols, n);
  for (const auto& o : outs) {
    vk::MatmulArgs a = product_args(x, n, o);
    a.xq = in_q8;
    const DeviceTensor& w = get(o.w);
    if (o.w.slice > 0) {  // one matrix of a stack
      const DeviceTensor m = stacked_matrix(w, o.w.slice, ctx_.caps().storage_buffer_alignment);
      record_product(matmul_, *rec_, m, a, n <= matvec_limit(m));
    } else {
      record_product(matmul_, *rec_, w, a, n <= matvec_limit(w));
    }
    wrote(o.y.act);
  }
}

void VulkanBackend::products_then_norm(Rows in, uint32_t n, const ProductOut& out,
                                       const NormAfter& norm) {
  const DeviceTensor& w = get(out.w);
  const auto rows = static_cast<uint32_t>(w.rows());
  if (can_leave_norm(out, norm, n)) {
    products(in, n, std::span(&out, 1));
    normalized_ = Normalized{norm.y.act, norm.x, get(norm.w).data, n};
    return;
  }
  // On the GEMMs, a split product's reduction pass normalizes the rows it sums.
  const bool reduce_norm = out.accumulate && out.y.act == norm.x.act && out.y.off == 0 &&
                           norm.x.off == 0 && out.y.stride == norm.x.stride && norm.n == rows &&
                           n <= mem_.f16_rows && matmul_.can_reduce_norm(rows) && norm.y.off == 0 &&
                           !wants_q8(norm.feeds, rows, n);
  const std::optional<vk::SplitParts> parts =
      reduce_norm ? deferred_product(in, n, out) : std::nullopt;
  if (!parts) {
    StepBackend::products_then_norm(in, n, out, norm);
    return;
  }
  barrier();
  if (parts->splits == 0) {
    rms_norm(norm.x, norm.w, norm.y, norm.n, n, norm.feeds);
    return;
  }
  const bool f16 = (norm.y.stride == 0 || norm.y.stride == rows) && wants_f16(norm.feeds, rows, n);
  vk::MatmulArgs a = product_args(in, n, out);
  a.rows = rows;
  if (a.y_stride == 0) a.y_stride = rows;
  vk::ReduceNormEpilogue e;
  e.weight = get(norm.w).data;
  e.y = mem_.slice(norm.y);
  e.y_stride = norm.y.stride;
  e.f16 = f16 ? f16_rows(n, rows) : vk::BufferSlice{};
  e.counters = mem_.row_counters;
  e.eps = spec_.norm_eps;
  matmul_.record_reduce_norm(*rec_, a, *parts, e);
  wrote(out.y.act);
  wrote(norm.y.act);
  if (f16) f16_of_ = F16Copy{norm.y.act, n};
}

void VulkanBackend::products_then_glu(Rows x, uint32_t n, std::span<const ProductOut> outs,
                                      const GluAfter& glu) {
  const DeviceTensor* w = outs.size() == 1 ? &get(outs[0].w) : nullptr;
  // One product holding both halves: its split-K partials go to the GLU unsummed.
  const bool stacked = w && !outs[0].accumulate && outs[0].y.off == 0 &&
                       glu.gate.act == outs[0].y.act && glu.up.act == outs[0].y.act;
  const std::optional<vk::SplitParts> parts =
      stacked ? deferred_product(x, n, outs[0]) : std::nullopt;
  if (!parts) {
    StepBackend::products_then_glu(x, n, outs, glu);
    return;
  }
  barrier();
  glu_rows(glu.act, glu.gate, glu.up, parts->splits ? &*parts : nullptr, glu.out, glu.n, n,
           glu.feeds);
}

void VulkanBackend::products_then_rope_kv(Rows x, uint32_t n, std::span<const ProductOut> outs,
                                          const RopeKvAfter& r) {
  const vk::ops::RopeParams rope = rope_params(r.rope);
  // The layer's own head size and count (Gemma 4's layers differ).
  const uint32_t hd = spec_.head_dim_of(r.layer), nkv = spec_.n_head_kv_of(r.layer);
  const uint32_t q_rows = r.n_q_heads * hd, kv_rows = nkv * hd;
  // Where each product's rows start among Q|K|V, and the rows it must have.
  uint32_t bases[3] = {0, q_rows, q_rows + kv_rows}, rows[3] = {q_rows, kv_rows, kv_rows};
  const bool stacked = outs.size() == 1;
  if (stacked) rows[0] = q_rows + 2 * kv_rows;
  const Rows* ys[3] = {&r.q, &r.k, &r.v};
  const auto cols = static_cast<uint32_t>(get(outs[0].w).cols());
  // Whether the products write Q, K and V where RoPE and the cache writes (fused or after them)
  // expect them: all stacked in one product, or each alone at offset 0, none accumulated.
  bool laid_out = stacked ? stacked_rows(outs[0], r) : outs.size() == 3;
  for (size_t i = 0; laid_out && i < outs.size(); ++i) {
    const DeviceTensor& w = get(outs[i].w);
    laid_out = !outs[i].accumulate && w.parts.size() == 1 && w.rows() == rows[i] &&
               outs[i].y.act == ys[i]->act && (stacked || (outs[i].y.off == 0 && ys[i]->off == 0));
  }
  // The fused epilogue writes f16 rows (a workgroup owns a pair of rows, not a block of 32).
  bool fuse = opt_.fused_rope_kv && laid_out && opt_.kv_cache_type == kv::CacheType::F16;
  for (size_t i = 0; fuse && i < outs.size(); ++i) {
    const DeviceTensor& w = get(outs[i].w);
    fuse = n <= matvec_limit(w) && matmul_.can_fuse_rope_kv(w.type, rope);
  }
  if (!fuse) {
    // On the GEMMs, RoPE and the cache writes read each product's rows or sum its split-K
    // partials themselves: Q, K and V (three products where their weight types differ, as in
    // Q4_K_M's Q6_K layers) then run side by side with one barrier after them, instead of a
    // reduction pass and a barrier after each.
    bool defer = laid_out;
    for (size_t i = 0; defer && i < outs.size(); ++i) defer = defers(outs[i], n);
    if (!defer) {
      StepBackend::products_then_rope_kv(x, n, outs, r);
      return;
    }
    vk::SplitParts parts[3];
    for (size_t i = 0; i < outs.size(); ++i) parts[i] = *deferred_product(x, n, outs[i]);
    barrier();
    const auto source = [&](size_t i, Rows rows) {
      const vk::SplitParts& p = parts[stacked ? 0 : i];
      if (p.splits == 0) return mem_.head_rows(rows);
      return vk::ops::HeadRows{p.parts, rows.off, p.ld, p.splits, p.stride};
    };
    vk::ops::rope(*rec_, ctx_.pipelines(), rope, batch_, source(0, r.q), mem_.head_rows(r.q),
                  r.n_q_heads);
    write_kv_rows(r.layer, /*value=*/false, &rope, source(1, r.k));
    write_kv_rows(r.layer, /*value=*/true, nullptr, source(2, r.v));
    wrote(r.q.act);
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
  e.k_cache = {mem_.k_region[r.layer], nkv, opt_.block_size};
  e.v_cache = {mem_.v_region[r.layer], nkv, opt_.block_size};
  e.q_rows = q_rows;
  e.kv_rows = kv_rows;
  for (size_t i = 0; i < outs.size(); ++i) {
    const DeviceTensor& w = get(outs[i].w);
    vk::MatmulArgs a;
    a.type = w.type;
    a.weights = w.data;
    a.x = mem_.slice(x);
    a.x_stride = x.stride;
    read_normalized(x, n, a);
    a.y = mem_.buf(ys[i]->act);
    a.y_stride = ys[i]->stride;
    a.rows = rows[i];
    a.cols = cols;
    a.batch = n;
    a.xq = xq;
    e.row_base = bases[i];
    matmul_.record_matvec_rope_kv(*rec_, a, e);
  }
  wrote(r.q.act);
}

void VulkanBackend::glu(GluAct act, Rows gate, Rows up, Rows out, uint32_t n, uint32_t rows,
                        std::span<const WeightRef> feeds) {
  glu_rows(act, gate, up, nullptr, out, n, rows, feeds);
}

void VulkanBackend::glu_rows(GluAct act, Rows gate, Rows up, const vk::SplitParts* parts, Rows out,
                             uint32_t n, uint32_t rows, std::span<const WeightRef> feeds) {
  const bool q8 = wants_q8(feeds, n, rows);
  const bool f16 =
      !q8 && (out.stride == 0 || out.stride == n) && out.off == 0 && wants_f16(feeds, n, rows);
  vk::ops::GluArgs g;
  g.n = n;
  g.n_rows = rows;
  g.act = act == GluAct::Silu       ? vk::ops::GluActivation::Silu
          : act == GluAct::GeluTanh ? vk::ops::GluActivation::GeluTanh
                                    : vk::ops::GluActivation::SwigluOai;
  if (parts) {
    g.gate = g.up = parts->parts;
    g.gate_off = gate.off;
    g.up_off = up.off;
    g.gate_stride = g.up_stride = parts->ld;
    g.splits = parts->splits;
    g.split_stride = parts->stride;
  } else {
    g.gate = mem_.slice(gate);
    g.up = mem_.slice(up);
    g.gate_stride = gate.stride;
    g.up_stride = up.stride;
  }
  g.out = mem_.slice(out);
  g.out_stride = out.stride;
  g.q8 = q8 ? mem_.xq : vk::BufferSlice{};
  g.f16 = f16 ? f16_rows(rows, n) : vk::BufferSlice{};
  vk::ops::glu(*rec_, ctx_.pipelines(), g);
  wrote(out.act);
  if (q8) q8_of_ = Q8Copy{out.act, rows, mem_.xq};
  if (f16) f16_of_ = F16Copy{out.act, rows};
}

bool VulkanBackend::stacked_rows(const ProductOut& out, const RopeKvAfter& r) const {
  const uint32_t hd = spec_.head_dim_of(r.layer);
  const uint32_t q_rows = r.n_q_heads * hd, kv_rows = spec_.n_head_kv_of(r.layer) * hd;
  return !out.accumulate && out.y.act == r.q.act && out.y.off == 0 && r.q.off == 0 &&
         r.k.off == q_rows && r.v.off == q_rows + kv_rows && r.k.act == r.q.act &&
         r.v.act == r.q.act && r.k.stride == r.q.stride && r.v.stride == r.q.stride;
}

// Batch 1 with float weights: the norm's own dispatch and barrier cost more than its readers'
// extra work of summing squares and scaling (on an H100, 1B F16 1.357-1.362 ms a step against
// 1.476-1.479 with the norms dispatched). At 8 vectors that extra work is eight times as much in
// every workgroup of products that are already compute-heavy: 3.09-3.11 ms against 2.26-2.28.
bool VulkanBackend::can_leave_norm(const ProductOut& out, const NormAfter& norm, uint32_t n) const {
  if (n != 1 || norm.feeds.empty() || norm.y.off != 0 || norm.x.off != 0 || norm.n == 0 ||
      (norm.y.stride != 0 && norm.y.stride != norm.n) || out.y.act == norm.y.act)
    return false;
  // A MoE router's input is read by the expert kernels too, which cannot normalize as they read.
  return std::all_of(norm.feeds.begin(), norm.feeds.end(), [&](const WeightRef& w) {
    if (w.w == model::Weight::FfnGateInp) return false;
    const DeviceTensor* t = find(w);
    return t && t->parts.size() == 1 && t->cols() == norm.n && n <= matvec_limit(*t) &&
           matmul_.can_read_normalized(t->type, n);
  });
}

void VulkanBackend::read_normalized(Rows x, uint32_t n, vk::MatmulArgs& a) {
  if (!normalized_ || normalized_->act != x.act || normalized_->rows != n || x.off != 0) return;
  a.x = mem_.slice(normalized_->src);
  a.x_stride = normalized_->src.stride;
  a.norm_weight = normalized_->w;
  a.norm_eps = spec_.norm_eps;
}

vk::MatmulArgs VulkanBackend::product_args(Rows x, uint32_t n, const ProductOut& o) {
  vk::MatmulArgs a;
  a.x = mem_.slice(x);
  a.x_stride = x.stride;
  read_normalized(x, n, a);
  a.y = mem_.buf(o.y.act);
  a.y_offset = o.y.off;
  a.y_stride = o.y.stride;
  a.batch = n;
  a.accumulate = o.accumulate;
  if (f16_of_ && f16_of_->act == x.act && f16_of_->rows == n && x.off == 0)
    a.x_f16 = f16_rows(n, static_cast<uint32_t>(get(o.w).cols()));
  return a;
}

vk::BufferSlice VulkanBackend::f16_rows(uint32_t rows, uint32_t cols) const {
  const uint64_t row_bytes = uint64_t{cols} * 2;
  const uint64_t whole_rows =
      std::min<uint64_t>(mem_.x_f16.size, ctx_.caps().max_storage_buffer_range) / row_bytes;
  return mem_.x_f16.sub(0, std::max<uint64_t>(whole_rows, rows) * row_bytes);
}

bool VulkanBackend::defers(const ProductOut& o, uint32_t n) const {
  const DeviceTensor& w = get(o.w);
  return n > matvec_limit(w) && w.parts.size() == 1;
}

std::optional<vk::SplitParts> VulkanBackend::deferred_product(Rows x, uint32_t n,
                                                              const ProductOut& o) {
  if (!defers(o, n)) return std::nullopt;
  const DeviceTensor& w = get(o.w);
  vk::MatmulArgs a = product_args(x, n, o);
  a.type = w.type;
  a.weights = w.data;
  a.rows = static_cast<uint32_t>(w.rows());
  a.cols = static_cast<uint32_t>(w.cols());
  if (a.y_stride == 0) a.y_stride = a.rows;
  vk::SplitParts parts;
  matmul_.record_matmul(*rec_, a, &parts);
  wrote(o.y.act);
  return parts;
}

vk::BufferSlice VulkanBackend::q8_input(Rows x, uint32_t cols, uint32_t n) {
  // A copy of strided rows (one of Gemma 3n's AltUp streams) is made for its one product.
  const bool packed = x.stride == 0 || x.stride == cols;
  if (!q8_of_ || q8_of_->act != x.act || q8_of_->rows != n || x.off != 0 || !packed) {
    matmul_.record_quantize_q8(*rec_, mem_.slice(x), cols, n, x.stride, mem_.xq);
    rec_->barrier();
    mark("quantize_q8");
    q8_of_ = Q8Copy{x.act, n, mem_.xq};
  }
  return q8_of_->q8;
}

bool VulkanBackend::wants_q8(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const {
  return cols % 32 == 0 && std::any_of(weights.begin(), weights.end(), [&](const WeightRef& w) {
           // Expert products: n is the up products' tokens, the down products' pairs (up:
           // the fused gate|up experts where the model has them).
           if (w.w == model::Weight::FfnUpExps && spec_.is_moe_layer(w.layer))
             return experts_read_q8(moe_up_experts(w.layer), false, cols, n);
           const DeviceTensor* t = find(w);
           if (!t) return false;
           if (w.w == model::Weight::FfnDownExps)
             return experts_read_q8(*t, true, cols, n / spec_.n_expert_used);
           return n <= matvec_limit(*t) && matmul_.int8_dot(t->type);
         });
}

bool VulkanBackend::experts_read_q8(const DeviceTensor& w, bool down, uint32_t cols,
                                    uint32_t T) const {
  const uint32_t rows = down ? T * spec_.n_expert_used : T;
  return cols % 32 == 0 && matmul_.int8_dot(w.type) &&
         moe_way(spec_.n_expert, spec_.n_expert_used, T) == MoeWay::Matvec &&
         vk::q8_activation_bytes(cols, rows) <= mem_.xq.size;
}

bool VulkanBackend::wants_f16(std::span<const WeightRef> weights, uint32_t cols, uint32_t n) const {
  return n <= mem_.f16_rows && cols % 8 == 0 &&
         std::any_of(weights.begin(), weights.end(), [&](const WeightRef& w) {
           const DeviceTensor* t = find(w);
           return t && n > matvec_limit(*t) && matmul_.reads_f16_rows(t->type, n);
         });
}

// With the tensor-core GEMMs, K-quant weights leave the matvec after 12 tokens and the other types
// after one pass of 8 vectors (runner.h's constants). On an H100 (bench/results/HISTORY.md,
// Fourteenth session), at 9 / 12 / 16 sequences on the GEMMs instead of two matvec passes: 1B F16
// +41% / +42% / +47%, 8B Q8_0 +4% / +15% / +35%, but 8B Q4_K_M -11% / even / +17% and 1B Q4_K_M
// -14% / -10% / -1% (their int8-dot decode is cheap, the GEMM's is not); switching K-quants above
// 12, 8B Q4_K_M at 13 / 16 sequences +3% / +18%, 1B Q4_K_M at 16 -1%.
uint32_t VulkanBackend::matvec_limit(const DeviceTensor& w) const {
  using gguf::TensorType;
  const TensorType type = w.type;
  if (!matmul_.coopmat(type)) return opt_.matvec_max_batch;
  const bool k_quant = type == TensorType::Q2_K || type == TensorType::Q3_K ||
                       type == TensorType::Q4_K || type == TensorType::Q5_K ||
                       type == TensorType::Q6_K;
  static_assert(kTensorCoreMatvecMaxBatch == vk::MatmulKernels::kMaxMatvecColumns);
  uint32_t limit = k_quant ? kTensorCoreMatvecMaxBatchKQuant : kTensorCoreMatvecMaxBatch;
  if (type == TensorType::F16 && (w.cols() >= kF16LongRowCols || w.rows() >= kF16WideRows) &&
      matmul_.coopmat2(type, kF16LongRowMatvecMaxBatch + 1))
    limit = std::min(limit, kF16LongRowMatvecMaxBatch);
  return std::min(opt_.matvec_max_batch, limit);
}

}  // namespace vkllm::runtime::detail
