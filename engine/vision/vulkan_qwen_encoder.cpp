// Qwen2.5-VL's and Qwen3-VL's towers and mergers on the Vulkan device (vulkan_image_encoder.h):
// the CPU encoder's graph (image_encoder.cpp encode_qwen25vl) as one submission.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/vision/image_preprocess.h"
#include "engine/vision/qwen_vl.h"
#include "engine/vision/vulkan_encoder_parts.h"

namespace vkllm::vision {

void VulkanImageEncoder::load_qwen25vl(const VisionWeights& w) {
  const VisionSpec& s = spec_;
  const uint32_t E = s.n_embd, F = s.n_ff, P = s.patch_size, T = s.text_embd;
  if (E % 4 != 0 || F % 4 != 0 || T % 4 != 0 || s.head_dim() > 256) {
    throw std::runtime_error("vision projector sizes the Vulkan kernels do not take (" +
                             std::to_string(E) + ", " + std::to_string(F) + ", heads of " +
                             std::to_string(s.head_dim()) + ")");
  }
  vk::Context& ctx = impl_->ctx;
  auto tw = std::make_unique<DynamicTower>();
  // A still image is both frames: one kernel, the sum of the two (F32 on the device).
  std::vector<float> patch = tensor_to_f32(w.patch_w);
  const std::vector<float> second = tensor_to_f32(w.patch_w1);
  for (size_t i = 0; i < patch.size(); ++i) patch[i] += second[i];
  tw->patch = upload_matrix(
      ctx, gguf::TensorType::F32,
      std::span(reinterpret_cast<const uint8_t*>(patch.data()), patch.size() * sizeof(float)),
      3 * P * P, E, "patch kernels");
  tw->patch_b = upload_vector(ctx, w.patch_b);
  tw->layer_norms = s.projector == ProjectorType::Qwen3vl;
  tw->position = tensor_to_f32(w.position);
  for (const VitLayerWeights& L : w.layers) {
    DeviceLayer d;
    d.ln1_w = upload_vector(ctx, L.ln1_w);
    d.ln2_w = upload_vector(ctx, L.ln2_w);
    d.ln1_b = upload_vector(ctx, L.ln1_b);
    d.ln2_b = upload_vector(ctx, L.ln2_b);
    d.q = upload_matrix(ctx, L.q_w, E), d.q_b = upload_vector(ctx, L.q_b);
    d.k = upload_matrix(ctx, L.k_w, E), d.k_b = upload_vector(ctx, L.k_b);
    d.v = upload_matrix(ctx, L.v_w, E), d.v_b = upload_vector(ctx, L.v_b);
    d.o = upload_matrix(ctx, L.o_w, E), d.o_b = upload_vector(ctx, L.o_b);
    if (!L.gate_w.bytes.empty()) d.gate = upload_matrix(ctx, L.gate_w, E);
    d.gate_b = upload_vector(ctx, L.gate_b);
    d.up = upload_matrix(ctx, L.up_w, E), d.up_b = upload_vector(ctx, L.up_b);
    d.down = upload_matrix(ctx, L.down_w, F), d.down_b = upload_vector(ctx, L.down_b);
    tw->layers.push_back(std::move(d));
  }
  tw->post_ln_w = upload_vector(ctx, w.post_ln_w);
  tw->post_ln_b = upload_vector(ctx, w.post_ln_b);
  tw->mm1 = upload_matrix(ctx, w.mm1_w, 4 * E);
  tw->mm1_b = upload_vector(ctx, w.mm1_b);
  tw->mm2 = upload_matrix(ctx, w.mm2_w, 4 * E);
  tw->mm2_b = upload_vector(ctx, w.mm2_b);
  for (const DeepstackWeights& ds : w.deepstack) {
    DeviceDeepstack d;
    d.layer = ds.layer;
    d.norm_w = upload_vector(ctx, ds.norm_w), d.norm_b = upload_vector(ctx, ds.norm_b);
    d.fc1 = upload_matrix(ctx, ds.fc1_w, 4 * E), d.fc1_b = upload_vector(ctx, ds.fc1_b);
    d.fc2 = upload_matrix(ctx, ds.fc2_w, 4 * E), d.fc2_b = upload_vector(ctx, ds.fc2_b);
    tw->deepstack.push_back(std::move(d));
  }
  impl_->dynamic = std::move(tw);
}

namespace {

// The batch of sequences [spans[i], spans[i + 1]) of the tower's rows, each over its own
// consecutive blocks from `first_block` on; `blocks` grows to the blocks used.
kv::BatchMeta qwen_spans_batch(const std::vector<uint32_t>& spans, uint32_t& blocks,
                               uint32_t& max_len) {
  const uint32_t bs = kv::kDefaultBlockSize;
  std::vector<std::vector<uint32_t>> tables;
  std::vector<kv::BatchSequence> seqs;
  uint32_t next = 0;
  max_len = 0;
  for (size_t i = 0; i + 1 < spans.size(); ++i) {
    const uint32_t n = spans[i + 1] - spans[i];
    std::vector<uint32_t> table((n + bs - 1) / bs);
    for (uint32_t& b : table) b = next++;
    tables.push_back(std::move(table));
    max_len = std::max(max_len, n);
  }
  for (size_t i = 0; i + 1 < spans.size(); ++i) {
    const uint32_t n = spans[i + 1] - spans[i];
    seqs.push_back({tables[i], n, n});
  }
  blocks = std::max(blocks, next);
  return kv::build_batch_meta(seqs, bs);
}

}  // namespace

ImageEmbeddings VulkanImageEncoder::encode_qwen25vl(const TowerPixels& pixels) {
  const VisionSpec& s = spec_;
  Impl& m = *impl_;
  DynamicTower& tw = *m.dynamic;
  vk::Context& ctx = m.ctx;
  vk::PipelineCache& pl = ctx.pipelines();
  const uint32_t P = s.patch_size, E = s.n_embd, F = s.n_ff, T = s.text_embd;
  const uint32_t d = s.head_dim(), taps = 3 * P * P, bs = kv::kDefaultBlockSize;
  const QwenVlLayout lay = qwen_vl_layout(s, pixels.width, pixels.height);
  const auto N = static_cast<uint32_t>(lay.order.size());
  const uint32_t units = N / 4, slots = 1 + static_cast<uint32_t>(tw.deepstack.size());

  uint32_t blocks = 0, full_len = 0, window_len = 0;
  const std::vector<uint32_t> all = {0, N};
  const kv::BatchMeta full = qwen_spans_batch(all, blocks, full_len);
  const kv::BatchMeta windowed = qwen_spans_batch(lay.windows, blocks, window_len);
  auto act = [&](uint64_t floats, const char* name) {
    return vk::Buffer(ctx.device(), floats * sizeof(float), vk::MemoryKind::DeviceLocal, name);
  };
  if (N > tw.capacity) {  // buffers for this many patches (kept for the next images)
    tw.cols = act(uint64_t{N} * taps, "patch rows");
    tw.x = act(uint64_t{N} * E, "x");
    tw.h = act(uint64_t{N} * E, "h");
    tw.q = act(uint64_t{N} * E, "q");
    tw.k = act(uint64_t{N} * E, "k");
    tw.v = act(uint64_t{N} * E, "v");
    tw.att = act(uint64_t{N} * E, "attention out");
    tw.gate = act(uint64_t{N} * F, "ffn gate");
    tw.up = act(uint64_t{N} * F, "ffn up");
    tw.hidden = act(uint64_t{N} * E, "merger hidden");              // units x 4 n_embd
    tw.out = act(uint64_t{units} * T * slots, "image embeddings");  // merger, deepstack
    tw.pos = vk::Buffer(ctx.device(), uint64_t{N} * 8, vk::MemoryKind::DeviceLocal, "positions");
    if (!tw.position.empty()) tw.pos_embd = act(uint64_t{N} * E, "learned positions");
    tw.capacity = N;
  }
  if (blocks > tw.cache_blocks) {
    const uint64_t region = uint64_t{blocks} * s.n_head * bs * d * 2;
    tw.k_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision K");
    tw.v_cache = vk::Buffer(ctx.device(), region, vk::MemoryKind::DeviceLocal, "vision V");
    tw.cache_blocks = blocks;
  }
  auto upload_meta = [&](vk::Buffer& b, const kv::BatchMeta& meta, const char* name) {
    if (b.size() < meta.words.size() * 4)
      b = vk::Buffer(ctx.device(), meta.words.size() * 4, vk::MemoryKind::DeviceLocal, name);
    vk::upload(ctx.device(), b.slice(), std::span<const uint32_t>(meta.words));
  };
  upload_meta(tw.meta, full, "vision attention batch");
  upload_meta(tw.window_meta, windowed, "vision window batch");
  vk::upload(ctx.device(), tw.pos.slice(), std::span<const uint32_t>(lay.pos));
  vk::upload(ctx.device(), tw.cols.slice(),
             std::span<const float>(patch_rows(pixels, P, lay.order)));
  if (!tw.position.empty()) {
    vk::upload(ctx.device(), tw.pos_embd.slice(),
               std::span<const float>(qwen3vl_positions(tw.position.data(), s.pos_side, E, lay)));
  }

  const vk::ops::BatchInfo full_batch{tw.meta.slice(), N, full.n_seqs};
  const vk::ops::BatchInfo window_batch{tw.window_meta.slice(), N, windowed.n_seqs};
  const vk::ops::CacheRegion kc{tw.k_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  const vk::ops::CacheRegion vc{tw.v_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  auto bias = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& b, uint32_t n,
                  uint32_t n_rows) { tower_add_bias(rec, pl, x, b, n, n_rows); };
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  m.product(rec, tw.patch, tw.cols.slice(), N, tw.x.slice());
  rec.barrier();
  bias(rec, tw.x, tw.patch_b, E, N);
  rec.barrier();
  if (tw.pos_embd.slice()) {
    vk::ops::add(rec, pl, tw.x.slice(), tw.pos_embd.slice(), tw.x.slice(), N * E);
    rec.barrier();
  }
  // A merger MLP over the units (their four rows as one of 4 n_embd, already normed into `in`):
  // fc1, GELU, fc2 into output slot `slot` (the merger's 0, the deepstack mergers' after it).
  const uint64_t slot_bytes = uint64_t{units} * T * sizeof(float);
  auto merge = [&](vk::CommandRecorder& rec, const vk::Buffer& in, const DeviceMatrix& fc1,
                   const vk::Buffer& b1, const DeviceMatrix& fc2, const vk::Buffer& b2,
                   uint32_t slot) {
    m.product(rec, fc1, in.slice(), units, tw.hidden.slice());
    rec.barrier();
    bias(rec, tw.hidden, b1, 4 * E, units);
    rec.barrier();
    vk::ops::gelu(rec, pl, tw.hidden.slice(), tw.hidden.slice(), units * 4 * E);
    rec.barrier();
    const vk::BufferSlice to = tw.out.slice(slot * slot_bytes, slot_bytes);
    m.product(rec, fc2, tw.hidden.slice(), units, to);
    rec.barrier();
    if (b2.slice()) {
      vk::ops::add_bias(rec, pl, to, b2.slice(), T, units);
      rec.barrier();
    }
  };
  size_t next_ds = 0;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const bool whole = s.full_attention(l);
    m.dynamic_layer(rec, s, tw, tw.layers[l], N, whole ? full_batch : window_batch,
                    whole ? full_len : window_len, kc, vc, /*rope_halves=*/true);
    if (next_ds < tw.deepstack.size() && tw.deepstack[next_ds].layer == l) {
      const DeviceDeepstack& ds = tw.deepstack[next_ds++];
      tower_norm(rec, pl, true, tw.x.slice(), ds.norm_w, ds.norm_b, tw.att.slice(), 4 * E, units,
                 s.eps);
      merge(rec, tw.att, ds.fc1, ds.fc1_b, ds.fc2, ds.fc2_b, static_cast<uint32_t>(next_ds));
    }
  }
  if (tw.post_ln_w.slice()) {
    tower_norm(rec, pl, tw.layer_norms, tw.x.slice(), tw.post_ln_w, tw.post_ln_b, tw.x.slice(), E,
               N, s.eps);
  }
  // The merger: each unit's four consecutive rows as one row of 4 n_embd.
  merge(rec, tw.x, tw.mm1, tw.mm1_b, tw.mm2, tw.mm2_b, 0);
  rec.submit_and_wait();

  const std::vector<float> rows =
      vk::download<float>(ctx.device(), tw.out.slice(), size_t{units} * T * slots);
  ImageEmbeddings out;
  out.n_tokens = units;
  out.n_embd = T * slots;
  out.data.resize(size_t{units} * T * slots);
  for (uint32_t r = 0; r < units; ++r)
    for (uint32_t k = 0; k < slots; ++k)
      std::copy_n(&rows[(size_t{k} * units + lay.unit_of[r]) * T], T,
                  &out.data[(size_t{r} * slots + k) * T]);
  return out;
}

}  // namespace vkllm::vision
