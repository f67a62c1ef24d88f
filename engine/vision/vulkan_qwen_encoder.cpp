// Qwen2.5-VL's tower and merger on the Vulkan device (vulkan_image_encoder.h): the CPU encoder's
// graph (image_encoder.cpp encode_qwen25vl) as one submission.
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
  for (const VitLayerWeights& L : w.layers) {
    DeviceLayer d;
    d.ln1_w = upload_vector(ctx, L.ln1_w);
    d.ln2_w = upload_vector(ctx, L.ln2_w);
    d.q = upload_matrix(ctx, L.q_w, E), d.q_b = upload_vector(ctx, L.q_b);
    d.k = upload_matrix(ctx, L.k_w, E), d.k_b = upload_vector(ctx, L.k_b);
    d.v = upload_matrix(ctx, L.v_w, E), d.v_b = upload_vector(ctx, L.v_b);
    d.o = upload_matrix(ctx, L.o_w, E), d.o_b = upload_vector(ctx, L.o_b);
    d.gate = upload_matrix(ctx, L.gate_w, E), d.gate_b = upload_vector(ctx, L.gate_b);
    d.up = upload_matrix(ctx, L.up_w, E), d.up_b = upload_vector(ctx, L.up_b);
    d.down = upload_matrix(ctx, L.down_w, F), d.down_b = upload_vector(ctx, L.down_b);
    tw->layers.push_back(std::move(d));
  }
  tw->post_ln_w = upload_vector(ctx, w.post_ln_w);
  tw->mm1 = upload_matrix(ctx, w.mm1_w, 4 * E);
  tw->mm1_b = upload_vector(ctx, w.mm1_b);
  tw->mm2 = upload_matrix(ctx, w.mm2_w, 4 * E);
  tw->mm2_b = upload_vector(ctx, w.mm2_b);
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
  const QwenVlLayout lay = qwen_vl_layout(pixels.width / P, pixels.height / P, s.window);
  const auto N = static_cast<uint32_t>(lay.order.size());
  const uint32_t units = N / 4;

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
    tw.hidden = act(uint64_t{N} * E, "merger hidden");  // units x 4 n_embd
    tw.out = act(uint64_t{units} * T, "image embeddings");
    tw.pos = vk::Buffer(ctx.device(), uint64_t{N} * 8, vk::MemoryKind::DeviceLocal, "positions");
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

  const vk::ops::BatchInfo full_batch{tw.meta.slice(), N, full.n_seqs};
  const vk::ops::BatchInfo window_batch{tw.window_meta.slice(), N, windowed.n_seqs};
  const vk::ops::CacheRegion kc{tw.k_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  const vk::ops::CacheRegion vc{tw.v_cache.slice(), s.n_head, bs, kv::CacheType::F16};
  auto rms = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& w,
                 const vk::Buffer& y) { tower_rms_norm(rec, pl, x, w, y, E, N, s.eps); };
  auto bias = [&](vk::CommandRecorder& rec, const vk::Buffer& x, const vk::Buffer& b, uint32_t n,
                  uint32_t n_rows) { tower_add_bias(rec, pl, x, b, n, n_rows); };
  vk::CommandRecorder rec(ctx.device());
  rec.begin();
  m.product(rec, tw.patch, tw.cols.slice(), N, tw.x.slice());
  rec.barrier();
  bias(rec, tw.x, tw.patch_b, E, N);
  rec.barrier();
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    const bool whole = s.full_attention(l);
    m.dynamic_layer(rec, s, tw, tw.layers[l], N, whole ? full_batch : window_batch,
                    whole ? full_len : window_len, kc, vc, /*rope_halves=*/true);
  }
  if (tw.post_ln_w.slice()) rms(rec, tw.x, tw.post_ln_w, tw.x);
  // The merger: each unit's four consecutive rows as one row of 4 n_embd.
  m.product(rec, tw.mm1, tw.x.slice(), units, tw.hidden.slice());
  rec.barrier();
  bias(rec, tw.hidden, tw.mm1_b, 4 * E, units);
  rec.barrier();
  vk::ops::gelu(rec, pl, tw.hidden.slice(), tw.hidden.slice(), units * 4 * E);
  rec.barrier();
  m.product(rec, tw.mm2, tw.hidden.slice(), units, tw.out.slice());
  rec.barrier();
  bias(rec, tw.out, tw.mm2_b, T, units);
  rec.submit_and_wait();

  const std::vector<float> rows =
      vk::download<float>(ctx.device(), tw.out.slice(), size_t{units} * T);
  ImageEmbeddings out;
  out.n_tokens = units;
  out.n_embd = T;
  out.data.resize(size_t{units} * T);
  for (uint32_t r = 0; r < units; ++r)
    std::copy_n(&rows[size_t{lay.unit_of[r]} * T], T, &out.data[size_t{r} * T]);
  return out;
}

}  // namespace vkllm::vision
