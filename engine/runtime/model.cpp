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

  // Group tensors into arenas of at most kMaxArena bytes, each sized exactly for its group.
  std::vector<std::vector<const gguf::TensorInfo*>> groups;
  std::vector<VkDeviceSize> group_bytes;
  for (const auto* t : order) {
    const VkDeviceSize need = padded(t->byte_size);
    if (need > kMaxArena) {
      throw std::runtime_error("tensor " + t->name + " (" + std::to_string(t->byte_size) +
                               " bytes) is larger than one device allocation block");
    }
    if (groups.empty() || group_bytes.back() + need > kMaxArena) {
      groups.emplace_back();
      group_bytes.push_back(0);
    }
    groups.back().push_back(t);
    group_bytes.back() += need;
  }

  vk::StagingUploader uploader(ctx.device());
  std::vector<std::byte> chunk(kChunk);
  for (size_t g = 0; g < groups.size(); ++g) {
    arenas_.emplace_back(ctx.device(), "weights " + std::to_string(g), group_bytes[g]);
    for (const auto* t : groups[g]) {
      DeviceTensor dt{t->name, t->type, t->shape,
                      arenas_.back().allocate(t->byte_size + kSlack, kAlign)};
      uploader.begin(dt.data.sub(0, t->byte_size));
      for (uint64_t done = 0; done < t->byte_size;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, t->byte_size - done));
        source.read(t->offset + done, std::span(chunk.data(), n));
        uploader.write(std::span<const std::byte>(chunk.data(), n));
        done += n;
      }
      uploader.end();
      weight_bytes_ += t->byte_size;
      tensors_.emplace(t->name, std::move(dt));
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
