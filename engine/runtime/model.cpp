#include "engine/runtime/model.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "engine/vulkan/matmul_ops.h"

namespace vkllm::runtime {

namespace {
constexpr VkDeviceSize kAlign = 256;
constexpr VkDeviceSize kMaxArena = VkDeviceSize(1) << 30;  // the runtime's largest block
constexpr size_t kChunk = size_t(8) << 20;

// Kernels read whole 32-bit words of 2-byte-aligned blocks, up to this far past a tensor's end.
constexpr VkDeviceSize kSlack = vk::kWeightReadSlackBytes;
VkDeviceSize padded(uint64_t n) {
  return (n + kSlack + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

Model::Model(vk::Context& ctx, const gguf::GgufFile& file)
    // The temporary source lives until the delegated constructor returns (a full-expression).
    : Model(ctx, file, *std::make_unique<GgufFileSource>(file)) {}

Model::Model(vk::Context& ctx, const gguf::GgufFile& file, TensorDataSource& source)
    : ctx_(&ctx), spec_(model::ModelSpec::from_gguf(file)) {
  // Load in file order so a streaming source reads forward only.
  std::vector<const gguf::TensorInfo*> order;
  for (const auto& t : file.tensors()) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });

  // A tensor larger than one binding (or one arena block) is stored as several runs of whole
  // rows, each bindable on its own: rows are independent in products and lookups.
  const VkDeviceSize part_limit =
      std::min<VkDeviceSize>(
          {kMaxArena, ctx.caps().max_storage_buffer_range, VkDeviceSize(1) << 32}) /
      kAlign * kAlign;
  struct Piece {
    const gguf::TensorInfo* t;
    uint64_t offset, bytes;  // within the tensor
    uint32_t first_row, rows;
  };
  std::vector<Piece> pieces;
  for (const auto* t : order) {
    if (padded(t->byte_size) <= part_limit) {
      const uint32_t rows = t->shape.size() > 1 ? static_cast<uint32_t>(t->shape[1]) : 1;
      pieces.push_back({t, 0, t->byte_size, 0, rows});
      continue;
    }
    const uint64_t row_bytes = t->shape.empty() ? 0 : gguf::row_bytes(t->type, t->shape[0]);
    const uint64_t rows = t->shape.size() == 2 ? t->shape[1] : 0;
    const uint64_t rows_per_part = row_bytes ? (part_limit - kSlack - kAlign) / row_bytes : 0;
    if (rows == 0 || rows_per_part == 0 || rows > UINT32_MAX) {
      throw std::runtime_error("tensor " + t->name + " (" + std::to_string(t->byte_size) +
                               " bytes) is larger than one storage-buffer binding (" +
                               std::to_string(part_limit) + " bytes) and cannot be split by rows");
    }
    for (uint64_t r = 0; r < rows; r += rows_per_part) {
      const uint64_t n = std::min(rows_per_part, rows - r);
      pieces.push_back(
          {t, r * row_bytes, n * row_bytes, static_cast<uint32_t>(r), static_cast<uint32_t>(n)});
    }
  }

  // Group the pieces into arenas of at most kMaxArena bytes, each sized exactly for its group.
  std::vector<std::vector<const Piece*>> groups;
  std::vector<VkDeviceSize> group_bytes;
  for (const auto& p : pieces) {
    const VkDeviceSize need = padded(p.bytes);
    if (groups.empty() || group_bytes.back() + need > kMaxArena) {
      groups.emplace_back();
      group_bytes.push_back(0);
    }
    groups.back().push_back(&p);
    group_bytes.back() += need;
  }

  vk::StagingUploader uploader(ctx.device());
  std::vector<std::byte> chunk(kChunk);
  for (size_t g = 0; g < groups.size(); ++g) {
    arenas_.emplace_back(ctx.device(), "weights " + std::to_string(g), group_bytes[g]);
    for (const Piece* p : groups[g]) {
      const gguf::TensorInfo* t = p->t;
      const vk::BufferSlice slice = arenas_.back().allocate(p->bytes + kSlack, kAlign);
      uploader.begin(slice.sub(0, p->bytes));
      for (uint64_t done = 0; done < p->bytes;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, p->bytes - done));
        source.read(t->offset + p->offset + done, std::span(chunk.data(), n));
        uploader.write(std::span<const std::byte>(chunk.data(), n));
        done += n;
      }
      uploader.end();
      weight_bytes_ += p->bytes;
      DeviceTensor& dt = tensors_[t->name];
      if (dt.parts.empty()) {
        dt.name = t->name;
        dt.type = t->type;
        dt.shape = t->shape;
      }
      dt.parts.push_back({slice, p->first_row, p->rows});
      // A single part is the whole tensor; a split one has no whole-tensor slice.
      dt.data = dt.parts.size() == 1 ? slice : vk::BufferSlice{};
    }
  }
  uploader.flush();
}

const DeviceTensor* Model::find(model::Weight w, uint32_t layer) const {
  auto it = tensors_.find(model::weight_name(w, layer));
  return it == tensors_.end() ? nullptr : &it->second;
}

const DeviceTensor& Model::get(model::Weight w, uint32_t layer) const {
  if (const auto* t = find(w, layer)) return *t;
  throw std::runtime_error("model has no tensor " + model::weight_name(w, layer));
}

const DeviceTensor& Model::output() const {
  return spec_.tied_embeddings ? get(model::Weight::TokenEmbd) : get(model::Weight::Output);
}

}  // namespace vkllm::runtime
