#include "engine/runtime/model.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/runtime/row_split.h"
#include "engine/runtime/weight_fusion.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/matmul_ops.h"
#include "engine/vulkan/transfer.h"
#include "engine/vulkan/weight_layout.h"

namespace vkllm::runtime {

namespace {
constexpr VkDeviceSize kAlign = 256;
constexpr VkDeviceSize kMaxArena = VkDeviceSize(1) << 30;  // the runtime's largest block
constexpr size_t kUploadChunk = size_t(8) << 20;
// Weights up to the enum's last one at the time of writing get a table slot; any added later
// fall back to the name lookup.
constexpr size_t kWeights = static_cast<size_t>(model::Weight::Dense3) + 1;

// Kernels read whole 32-bit words of 2-byte-aligned blocks, up to this far past a tensor's end.
constexpr VkDeviceSize kSlack = vk::kWeightReadSlackBytes;
VkDeviceSize padded(uint64_t n) {
  return (n + kSlack + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

Model::Model(vk::Context& ctx, const gguf::GgufFile& file, const ModelOptions& options)
    // The temporary source lives until the delegated constructor returns (a full-expression).
    : Model(ctx, file, *std::make_unique<GgufFileSource>(file), options) {}

Model::Model(vk::Context& ctx, const gguf::GgufFile& file, TensorDataSource& source,
             const ModelOptions& options)
    : layers_(options.layers),
      shard_(options.shard),
      ctx_(&ctx),
      spec_(model::ModelSpec::from_gguf(file)) {
  layers_.end = std::min(layers_.end, spec_.n_layer);
  if (shard_.split()) {
    check_row_split(spec_, file, shard_.count);
    if (is_stage() || shard_.index >= shard_.count)
      throw std::invalid_argument("a row shard holds every layer, as one of its devices");
  }
  if (layers_.first >= layers_.end && spec_.n_layer > 0) {
    throw std::invalid_argument("layer range [" + std::to_string(layers_.first) + ", " +
                                std::to_string(layers_.end) + ") holds none of the model's " +
                                std::to_string(spec_.n_layer) + " layers");
  }
  // Gemma 3n's graph (gemma3n_forward.h) reads its FFN gate apart from up (it sparsifies the gate
  // first): no stacked gate|up.
  // A tensor larger than one binding (or one arena block) is stored as several runs of whole
  // rows, each bindable on its own: rows are independent in products and lookups. Experts are
  // fused only within one (the MoE kernels bind a tensor whole).
  const VkDeviceSize part_limit =
      std::min<VkDeviceSize>(
          {kMaxArena, ctx.caps().max_storage_buffer_range, VkDeviceSize(1) << 32}) /
      kAlign * kAlign;
  TensorPlan plan = plan_device_tensors(file, spec_, options.fuse_weights && !spec_.is_gemma3n(),
                                        part_limit - kSlack - kAlign - vk::kMaxRepackPaddingBytes);
  std::erase_if(plan.tensors, [&](const PlannedTensor& t) { return !holds(t.name); });
  if (const Model* other = options.share_from) {
    std::erase_if(plan.tensors, [&](const PlannedTensor& t) {
      // The same bytes of the same file: name, type, shape and where they lie.
      const auto it = other->tensors_.find(t.name);
      if (it == other->tensors_.end() || it->second.type != t.type || it->second.shape != t.shape ||
          t.sources.size() != 1 || it->second.file_offset != t.sources[0]->offset)
        return false;
      tensors_.emplace(t.name, it->second);  // its device memory stays the other model's
      shared_bytes_ += t.byte_size;
      return true;
    });
  }
  // A row shard's part of each layer tensor (the views live until the upload is done).
  const std::deque<gguf::TensorInfo> shard_views =
      shard_.split() ? shard_tensor_plan(plan, spec_, shard_) : std::deque<gguf::TensorInfo>{};
  if (shard_.split()) spec_ = row_shard_spec(spec_, shard_.count);
  spec_.fused_qkv = spec_.fused_qkv || plan.fused_qkv;
  spec_.fused_gate_up = spec_.fused_gate_up || plan.fused_gate_up;
  std::vector<const PlannedTensor*> order;
  for (const auto& t : plan.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](auto* a, auto* b) { return a->sources[0]->offset < b->sources[0]->offset; });

  struct Piece {
    const PlannedTensor* t;
    uint64_t offset, bytes;  // within the tensor
    uint32_t first_row, rows;
    vk::BufferSlice slice;
  };
  std::vector<Piece> pieces;
  std::unordered_map<const PlannedTensor*, std::pair<size_t, size_t>> pieces_of;  // [first, end)
  for (const auto* t : order) {
    const size_t first = pieces.size();
    if (padded(vk::device_weight_bytes(t->type, t->byte_size)) <= part_limit) {
      const uint32_t rows = t->shape.size() > 1 ? static_cast<uint32_t>(t->shape[1]) : 1;
      pieces.push_back({t, 0, t->byte_size, 0, rows, {}});
    } else {
      const uint64_t row_bytes = t->shape.empty() ? 0 : gguf::row_bytes(t->type, t->shape[0]);
      const uint64_t rows = t->shape.size() == 2 ? t->shape[1] : 0;
      const uint64_t rows_per_part =
          row_bytes ? (part_limit - kSlack - kAlign - vk::kMaxRepackPaddingBytes) / row_bytes : 0;
      if (rows == 0 || rows_per_part == 0 || rows > UINT32_MAX) {
        throw std::runtime_error("tensor " + t->name + " (" + std::to_string(t->byte_size) +
                                 " bytes) is larger than one storage-buffer binding (" +
                                 std::to_string(part_limit) +
                                 " bytes) and cannot be split by rows");
      }
      for (uint64_t r = 0; r < rows; r += rows_per_part) {
        const uint64_t n = std::min(rows_per_part, rows - r);
        pieces.push_back({t,
                          r * row_bytes,
                          n * row_bytes,
                          static_cast<uint32_t>(r),
                          static_cast<uint32_t>(n),
                          {}});
      }
    }
    pieces_of[t] = {first, pieces.size()};
  }

  // Group the pieces into arenas of at most kMaxArena bytes, each sized exactly for its group.
  std::vector<VkDeviceSize> group_bytes;
  std::vector<size_t> group_of(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    const VkDeviceSize need = padded(vk::device_weight_bytes(pieces[i].t->type, pieces[i].bytes));
    if (group_bytes.empty() || group_bytes.back() + need > kMaxArena) group_bytes.push_back(0);
    group_bytes.back() += need;
    group_of[i] = group_bytes.size() - 1;
  }
  for (size_t g = 0; g < group_bytes.size(); ++g)
    arenas_.emplace_back(ctx.device(), "weights " + std::to_string(g), group_bytes[g]);
  for (size_t i = 0; i < pieces.size(); ++i) {
    Piece& p = pieces[i];
    p.slice =
        arenas_[group_of[i]].allocate(vk::device_weight_bytes(p.t->type, p.bytes) + kSlack, kAlign);
    weight_bytes_ += p.bytes;
    DeviceTensor& dt = tensors_[p.t->name];
    if (dt.parts.empty()) {
      dt.name = p.t->name;
      dt.type = p.t->type;
      dt.shape = p.t->shape;
      dt.file_offset = p.t->sources.size() == 1 ? p.t->sources[0]->offset : DeviceTensor::kFused;
    }
    dt.parts.push_back({p.slice, p.first_row, p.rows});
    // A single part is the whole tensor; a split one has no whole-tensor slice.
    dt.data = dt.parts.size() == 1 ? p.slice : vk::BufferSlice{};
  }

  // Upload in file order so a streaming source reads forward only; a fused tensor's sources land
  // at their row offsets, across its parts. A strided view (stacked experts' gate or up half)
  // is a range per expert, so the two halves' ranges interleave in file order.
  struct Source {
    uint64_t file_at, bytes;  // within the data section
    const PlannedTensor* into;
    uint64_t at;  // byte offset within `into`
  };
  std::vector<Source> sources;
  for (const auto& t : plan.tensors) {
    // Per expert, the destination holds every source's rows of it in turn (PlannedTensor::
    // per_expert); else source after source.
    const uint64_t experts = t.per_expert ? t.shape[2] : 1;
    const uint64_t expert_bytes = t.byte_size / experts;
    uint64_t at = 0;
    for (const gguf::TensorInfo* s : t.sources) {
      if (s->strided() || t.per_expert) {
        const uint64_t n = s->byte_size / s->shape[2];
        const uint64_t stride = s->strided() ? s->expert_stride : n;
        for (uint64_t e = 0; e < s->shape[2]; ++e) {
          sources.push_back({s->offset + s->expert_skip + e * stride, n, &t,
                             t.per_expert ? at + e * expert_bytes : at + e * n});
        }
        at += t.per_expert ? n : s->byte_size;
      } else {
        sources.push_back({s->offset, s->byte_size, &t, at});
        at += s->byte_size;
      }
    }
  }
  std::sort(sources.begin(), sources.end(),
            [](const Source& a, const Source& b) { return a.file_at < b.file_at; });
  vk::StagingUploader uploader(ctx.device());
  std::vector<std::byte> chunk(kUploadChunk);
  for (const Source& s : sources) {
    const auto [first, end] = pieces_of.at(s.into);
    for (size_t i = first; i < end; ++i) {
      const Piece& p = pieces[i];
      const uint64_t lo = std::max(p.offset, s.at);
      const uint64_t hi = std::min(p.offset + p.bytes, s.at + s.bytes);
      if (lo >= hi) continue;
      uploader.begin(p.slice.sub(lo - p.offset, hi - lo));
      for (uint64_t done = lo; done < hi;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kUploadChunk, hi - done));
        source.read(s.file_at + (done - s.at), std::span(chunk.data(), n));
        uploader.write(std::span<const std::byte>(chunk.data(), n));
        done += n;
      }
      uploader.end();
    }
  }
  uploader.flush();
  // Each separately bound part is repacked from its own first block, as the kernels read it.
  if (std::any_of(pieces.begin(), pieces.end(),
                  [](const Piece& p) { return vk::repacked_on_device(p.t->type); })) {
    vk::CommandRecorder rec(ctx.device());
    rec.begin();
    rec.barrier();  // the staging copies before the repack reads
    for (const Piece& p : pieces)
      vk::record_repack_weights(rec, ctx.pipelines(), p.t->type, p.slice, p.bytes);
    rec.submit_and_wait();
  }

  // YaRN's per-pair divisors are served as the rope_freqs weight (model_spec.h).
  if (!spec_.yarn_freq_factors.empty()) {
    const auto& f = spec_.yarn_freq_factors;
    arenas_.emplace_back(ctx.device(), "rope factors", padded(f.size() * 4));
    DeviceTensor& dt = tensors_[model::weight_name(model::Weight::RopeFreqs)];
    dt.name = model::weight_name(model::Weight::RopeFreqs);
    dt.type = gguf::TensorType::F32;
    dt.shape = {f.size()};
    dt.data = arenas_.back().allocate(f.size() * 4 + kSlack, kAlign);
    dt.parts = {{dt.data, 0, 1}};
    vk::upload(ctx.device(), dt.data, std::span<const float>(f));
  }

  const uint32_t layers = std::max<uint32_t>(spec_.n_layer, 1);
  by_weight_.assign(size_t{layers} * kWeights, nullptr);
  for (uint32_t l = 0; l < layers; ++l) {
    for (size_t w = 0; w < kWeights; ++w) {
      auto it = tensors_.find(model::weight_name(static_cast<model::Weight>(w), l));
      if (it != tensors_.end()) by_weight_[l * kWeights + w] = &it->second;
    }
  }
}

bool Model::holds(const std::string& name) const {
  if (name.starts_with("blk.")) {
    return layers_.contains(static_cast<uint32_t>(std::strtoul(name.c_str() + 4, nullptr, 10)));
  }
  if (name == model::weight_name(model::Weight::TokenEmbd))
    return has_embeddings() || (has_output() && spec_.tied_embeddings);
  if (name == model::weight_name(model::Weight::OutputNorm) ||
      name == model::weight_name(model::Weight::Output))
    return has_output();
  return true;
}

const DeviceTensor* Model::find(model::Weight w, uint32_t layer) const {
  if (static_cast<size_t>(w) >= kWeights) {
    auto it = tensors_.find(model::weight_name(w, layer));
    return it == tensors_.end() ? nullptr : &it->second;
  }
  if (!model::is_per_layer(w)) layer = 0;
  const size_t i = size_t{layer} * kWeights + static_cast<size_t>(w);
  return i < by_weight_.size() ? by_weight_[i] : nullptr;
}

const DeviceTensor& Model::get(model::Weight w, uint32_t layer) const {
  if (const auto* t = find(w, layer)) return *t;
  throw std::runtime_error("model has no tensor " + model::weight_name(w, layer));
}

const DeviceTensor& Model::output() const {
  return spec_.tied_embeddings ? get(model::Weight::TokenEmbd) : get(model::Weight::Output);
}

}  // namespace vkllm::runtime
