// VulkanBackend::moe_ffn (declared in vulkan_backend_impl.h): routing, then the selected experts'
// products on one of two paths by the step's (token, expert) pairs.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/runtime/vulkan_backend_impl.h"
#include "engine/runtime/weight_ops.h"
#include "engine/vulkan/moe_ops.h"
#include "engine/vulkan/row_ops.h"

namespace vkllm::runtime::detail {

using model::Weight;

namespace {

// The auto thresholds, in (token, expert) pairs, of the three ways to run the experts:
// - the indirect matvec (each pair reads its expert's rows): a few pairs, no grouping pass;
// - the grouped products on the decode kernel (each expert's rows read once per 8 of its pairs)
//   from as many pairs as experts: grouping costs a dispatch, a combine and two barriers, which
//   pay once experts get about a pair each;
// - the grouped GEMMs (each expert's weight tile read once per tile of its pairs) from
//   max(128, 16 x experts), where experts get two passes of 8 pairs or more.
// On an H200 before the grouped decode kernel (4-layer real-width models, tok/s, grouped GEMMs /
// indirect matvec): Qwen3-30B-A3B (128 experts, 8 used) at 4 sequences (32 pairs) 2,659 / 4,129,
// 16 (128) 6,318 / 7,465, 32 (256) 8,004 / 7,468; gpt-oss-20b (32 experts, 4 used) at 8 (32 pairs)
// 2,439 / 3,389, 32 (128) 5,411 / 3,941. The tuning keys moe_matvec_groups_min_pairs and
// moe_grouped_min_pairs override them.
uint32_t grouped_min_pairs(uint32_t n_expert) {
  return std::max(128u, 16 * n_expert);
}

// The activation the experts' down products read: the GLU's output, or for up-only experts the
// up rows, squared-ReLU'd in place.
Act moe_expert_act_rows(const MoeSpec& m) {
  return m.gated ? Act::FfnAct : Act::Up;
}

}  // namespace

void VulkanBackend::check_moe_weights() const {
  if (spec_.n_expert > vk::ops::kMoeMaxExperts) {
    throw std::runtime_error("the Vulkan backend routes at most " +
                             std::to_string(vk::ops::kMoeMaxExperts) + " experts; this model has " +
                             std::to_string(spec_.n_expert));
  }
  if (!ctx_.device().caps().subgroup_arithmetic()) {
    throw std::runtime_error(
        "the Vulkan backend routes experts with subgroup arithmetic, which this device lacks");
  }
  if (spec_.n_expert_used > vk::ops::kMoeMaxUsed) {
    throw std::runtime_error(
        "the Vulkan backend routes at most " + std::to_string(vk::ops::kMoeMaxUsed) +
        " experts per token; this model uses " + std::to_string(spec_.n_expert_used));
  }
  for (uint32_t l = m_.layers().first; l < m_.layers().end; ++l) {
    if (!spec_.is_moe_layer(l)) continue;
    const bool fused = find({Weight::FfnGateUpExps, l}) != nullptr;
    for (Weight w :
         {Weight::FfnGateUpExps, Weight::FfnGateExps, Weight::FfnUpExps, Weight::FfnDownExps}) {
      if (w == Weight::FfnGateExps && spec_.moe_up_only) continue;  // no gate (Nemotron-H MoE)
      if ((w == Weight::FfnGateUpExps) != fused && w != Weight::FfnDownExps) continue;
      const DeviceTensor& t = get({w, l});
      if (!vk::ops::moe_matvec_supports(t.type) || !vk::has_matmul_kernels(t.type)) {
        throw std::runtime_error(t.name + ": no Vulkan expert kernel for weights of type " +
                                 std::string(gguf::type_name(t.type)));
      }
      if (t.parts.size() != 1) {
        throw std::runtime_error(t.name + " is larger than one storage-buffer binding");
      }
    }
    if (spec_.moe_select_bias && get({Weight::FfnExpProbsBias, l}).type != gguf::TensorType::F32) {
      throw std::runtime_error(get({Weight::FfnExpProbsBias, l}).name +
                               ": the Vulkan backend reads the selection bias as f32");
    }
    // Gemma 4's per-expert output scales are read as f32 values (moe_route multiplies them in).
    if (spec_.moe_down_scales) {
      const DeviceTensor& s = get({Weight::FfnDownExpsScale, l});
      if (s.type != gguf::TensorType::F32)
        throw std::runtime_error(s.name + ": the Vulkan backend reads expert scales as f32");
    }
  }
}

VulkanBackend::MoeWay VulkanBackend::moe_way(uint32_t n_expert, uint32_t n_used, uint32_t T) const {
  const vk::KernelTuning& t = ctx_.device().tuning();
  const uint64_t pairs = uint64_t{T} * n_used;
  if (pairs >= (t.moe_grouped_min_pairs ? t.moe_grouped_min_pairs : grouped_min_pairs(n_expert)))
    return MoeWay::GroupedGemm;
  if (pairs >= (t.moe_matvec_groups_min_pairs ? t.moe_matvec_groups_min_pairs : n_expert))
    return MoeWay::GroupedMatvec;
  return MoeWay::Matvec;
}

void VulkanBackend::moe_ffn(const MoeSpec& m, uint32_t T) {
  if (T == 0) return;
  // Router logits into Up (n_expert per token; free until the up products), from the router's
  // own input rows where it has them (Gemma 4). Always on the decode kernel: the router has only
  // n_expert rows, so the tiled GEMM's grid is a handful of row tiles whatever the batch and
  // leaves the GPU idle (on an H200, 0.22 ms a layer for Qwen3-30B-A3B's 128 x 2048 F32 router at
  // 32 sequences and at 512 tokens alike, a quarter of the layer), while the matvec's passes of 8
  // vectors spread over row groups x vector groups.
  const ProductOut router{{Weight::FfnGateInp, m.layer}, {Act::Up, 0, m.n_expert}};
  record_product(matmul_, *rec_, get(router.w),
                 product_args(m.router_own_input ? m.router_x : m.x, T, router), /*matvec=*/true);
  wrote(Act::Up);
  if (m.biases) {
    barrier();
    add_bias({Weight::FfnGateInpBias, m.layer}, {Act::Up, 0, m.n_expert}, m.n_expert, T);
  }
  barrier();
  mark("moe_router");
  vk::ops::MoeRouteArgs r;
  r.logits = mem_.buf(Act::Up);
  r.ids = mem_.moe_ids;
  r.weights = mem_.moe_weights;
  r.n_expert = m.n_expert;
  r.n_used = m.n_used;
  r.n_tokens = T;
  r.norm = m.norm_weights;
  r.top_k_first = m.softmax_after_top_k;
  r.weight_scale = m.weight_scale;
  r.sigmoid = m.sigmoid;
  r.sigmoid_scores = m.sigmoid_scores;
  if (m.select_bias) r.bias = get({Weight::FfnExpProbsBias, m.layer}).data;
  if (m.down_scales) r.scales = get({Weight::FfnDownExpsScale, m.layer}).data;
  vk::ops::moe_route(*rec_, ctx_.pipelines(), r);
  if (!m.accumulate) {
    // The experts' sum overwrites out (which may be the router's input: read above, before the
    // barrier): zeroed here, summed into after the barriers of the expert products.
    const uint32_t E = m.n_embd;
    if (m.out.stride != 0 && m.out.stride != E)
      throw std::logic_error("moe_ffn: an overwritten output must be packed rows");
    rec_->fill(mem_.slice(m.out).sub(0, 4ull * T * E), 0);
  }
  barrier();
  mark("moe_route");
  const MoeWay way = moe_way(m.n_expert, m.n_used, T);
  if (way == MoeWay::Matvec) {
    moe_experts_matvec(m, T);
  } else {
    moe_experts_grouped(m, T, way == MoeWay::GroupedMatvec);
  }
  if (!rec_->dry()) ++moe_ffns_[static_cast<size_t>(way)];  // the warm-up's dry steps run nothing
  wrote(m.out.act);
}

const DeviceTensor& VulkanBackend::moe_up_experts(uint32_t layer) const {
  const DeviceTensor* fused = find({Weight::FfnGateUpExps, layer});
  return fused ? *fused : get({Weight::FfnUpExps, layer});
}

std::vector<VulkanBackend::ExpertProduct> VulkanBackend::moe_gate_up_products(
    const MoeSpec& m) const {
  // Fused gate|up experts: one product of 2 x n_ff rows per pair into Up (twice as wide as the
  // others for a dense fused gate|up; the router's logits in it are consumed by the routing), the
  // GLU then reads its halves.
  if (const DeviceTensor* fused = find({Weight::FfnGateUpExps, m.layer}))
    return {{fused, Act::Up, 2 * m.n_ff}};
  std::vector<ExpertProduct> out{{&get({Weight::FfnUpExps, m.layer}), Act::Up, m.n_ff}};
  if (m.gated) out.push_back({&get({Weight::FfnGateExps, m.layer}), Act::Gate, m.n_ff});
  return out;
}

void VulkanBackend::moe_experts_matvec(const MoeSpec& m, uint32_t T) {
  const uint32_t K = m.n_used, F = m.n_ff, E = m.n_embd;
  const DeviceTensor& up = moe_up_experts(m.layer);
  const DeviceTensor& down = get({Weight::FfnDownExps, m.layer});

  // Gate (where the experts have one) and up of every (token, rank) pair.
  vk::MoeMatvecArgs a;
  a.cols = E;
  a.rows = F;
  a.n_expert = m.n_expert;
  a.n_used = K;
  a.n_items = T * K;
  a.x = mem_.slice(m.x);
  a.x_stride = m.x.stride;
  a.ids = mem_.moe_ids;
  a.weights = mem_.moe_weights;
  // The q8 copy of x where the FFN norm wrote one (ffn_inputs names the up experts), and below
  // the GLU's for the down products: a workgroup's few rows of a small expert read less weight
  // than f32 activations, so int8 rows (a quarter of the bytes, integer dot products) pay. On an
  // H200, Qwen3-30B-A3B Q4_K_M decode: 1 sequence 197 -> 247 tok/s, 8 sequences 595 -> 860.
  a.xq = q8_copy(m.x, T);
  for (const ExpertProduct& p : moe_gate_up_products(m)) {
    a.type = p.w->type;
    a.w = p.w->data;
    a.rows = p.rows;
    a.y = mem_.buf(p.out);
    matmul_.record_moe_matvec(*rec_, a);
    wrote(p.out);
  }
  moe_gate_up_bias_glu(m, T);

  // Down products of each token's pairs, weighted and summed into the residual.
  vk::MoeMatvecArgs d = a;
  d.type = down.type;
  d.w = down.data;
  d.cols = F;
  d.rows = E;
  d.n_items = T;
  d.x = mem_.buf(moe_expert_act_rows(m));
  d.x_stride = F;
  d.x_per_pair = true;
  d.combine = true;
  d.y = mem_.slice(m.out);
  d.y_stride = m.out.stride;
  d.xq = q8_copy({moe_expert_act_rows(m)}, T * K);  // the GLU's, where it wrote one
  if (!rec_->dry() && a.xq && d.xq && matmul_.int8_dot(up.type) && matmul_.int8_dot(down.type))
    ++moe_int8_ffns_;
  matmul_.record_moe_matvec(*rec_, d);
  moe_down_bias(m, T);
}

void VulkanBackend::moe_experts_grouped(const MoeSpec& m, uint32_t T, bool matvec) {
  const uint32_t K = m.n_used, F = m.n_ff, E = m.n_embd;
  const DeviceTensor& down = get({Weight::FfnDownExps, m.layer});

  vk::ops::moe_group(
      *rec_, ctx_.pipelines(),
      {.ids = mem_.moe_ids, .groups = mem_.moe_groups, .n_expert = m.n_expert, .n_pairs = T * K});
  barrier();

  // Gate and up: each expert's tokens gathered from x, the products scattered to their pairs'
  // rows of Gate and Up.
  vk::MoeMatmulArgs a;
  a.rows = F;
  a.cols = E;
  a.n_expert = m.n_expert;
  a.n_used = K;
  a.n_tokens = T;
  a.x = mem_.slice(m.x);
  a.x_stride = m.x.stride;
  a.groups = mem_.moe_groups;
  a.matvec = matvec;
  for (const ExpertProduct& p : moe_gate_up_products(m)) {
    a.type = p.w->type;
    a.weights = p.w->data;
    a.rows = p.rows;
    a.y = mem_.buf(p.out);
    matmul_.record_moe_matmul(*rec_, a);
    wrote(p.out);
  }
  moe_gate_up_bias_glu(m, T);

  // Down: each pair's product into its row of moe_pair_out, then each token's rows weighted and
  // summed into the residual in rank order.
  vk::MoeMatmulArgs d = a;
  d.type = down.type;
  d.weights = down.data;
  d.rows = E;
  d.cols = F;
  d.x = mem_.buf(moe_expert_act_rows(m));
  d.x_stride = F;
  d.x_per_pair = true;
  d.y = mem_.moe_pair_out;
  d.y_stride = E;
  matmul_.record_moe_matmul(*rec_, d);
  barrier();
  vk::ops::moe_combine(*rec_, ctx_.pipelines(),
                       {.pairs = mem_.moe_pair_out,
                        .weights = mem_.moe_weights,
                        .y = mem_.slice(m.out),
                        .rows = E,
                        .n_used = K,
                        .n_tokens = T,
                        .y_stride = m.out.stride});
  moe_down_bias(m, T);
}

void VulkanBackend::moe_gate_up_bias_glu(const MoeSpec& m, uint32_t T) {
  const uint32_t K = m.n_used, F = m.n_ff;
  // Fused gate|up experts wrote each pair's gate rows, then its up rows, into Up.
  const bool fused = find({Weight::FfnGateUpExps, m.layer}) != nullptr;
  if (m.weight_before_ffn) {
    // Llama 4 weighs the experts' input: gate(w x) = w gate(x), up likewise (no biases), so each
    // pair's gate and up rows take its weight, and the combine then adds the outputs at weight 1.
    if (m.biases) throw std::logic_error("moe_ffn: expert biases with weights before the FFN");
    barrier();
    const uint32_t n = fused ? 2 * F : F;
    for (Act a : {Act::Gate, Act::Up}) {
      if (fused && a == Act::Gate) continue;
      vk::ops::rows_binary(*rec_, ctx_.pipelines(), vk::ops::RowsOp::RowScale, {mem_.buf(a), 0, n},
                           {mem_.moe_weights, 0, 1}, {mem_.buf(a), 0, n}, n, T * K);
    }
    barrier();
    rec_->fill(mem_.moe_weights.sub(0, 4ull * T * K), 0x3F800000u);  // 1.0f
  }
  if (m.biases) {
    if (fused) throw std::logic_error("moe_ffn: expert biases with fused gate|up experts");
    barrier();
    for (const auto& [w, out] : {std::pair{Weight::FfnGateExpsBias, Act::Gate},
                                 std::pair{Weight::FfnUpExpsBias, Act::Up}}) {
      vk::ops::moe_bias(*rec_, ctx_.pipelines(),
                        {.y = mem_.buf(out),
                         .bias = get({w, m.layer}).data,
                         .ids = mem_.moe_ids,
                         .weights = mem_.moe_weights,
                         .rows = F,
                         .n_used = K,
                         .n_items = T * K});
    }
  }
  barrier();
  mark("moe_gate_up");
  if (m.gated) {
    // With a q8 copy for the down products where they read one (wants_q8).
    const WeightRef down{Weight::FfnDownExps, m.layer};
    if (fused) {
      glu(m.act, {Act::Up, 0, 2 * F}, {Act::Up, F, 2 * F}, {Act::FfnAct}, F, T * K,
          std::span(&down, 1));
    } else {
      glu(m.act, {Act::Gate}, {Act::Up}, {Act::FfnAct}, F, T * K, std::span(&down, 1));
    }
  } else {
    // Up-only experts (Nemotron-H MoE): relu(u) * u = relu(u)^2 in place; the down products read
    // Up (moe_act).
    gate_rows(GateAct::Relu, {Act::Up, 0, F}, {Act::Up, 0, F}, F, T * K, false);
  }
  barrier();
  mark("moe_glu");
}

void VulkanBackend::moe_down_bias(const MoeSpec& m, uint32_t T) {
  if (!m.biases) return;
  barrier();
  vk::ops::moe_bias(*rec_, ctx_.pipelines(),
                    {.y = mem_.slice(m.out),
                     .bias = get({Weight::FfnDownExpsBias, m.layer}).data,
                     .ids = mem_.moe_ids,
                     .weights = mem_.moe_weights,
                     .rows = m.n_embd,
                     .n_used = m.n_used,
                     .n_items = T,
                     .y_stride = m.out.stride,
                     .combine = true});
}

}  // namespace vkllm::runtime::detail
