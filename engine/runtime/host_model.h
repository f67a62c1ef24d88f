// A model whose weights live in host memory, for the CPU backend: its ModelSpec and every weight
// tensor, either copied into one aligned allocation on 2 MiB pages (from a TensorDataSource such
// as the server's blob stream, or from a GgufFile's mapping) or pointing straight into a
// GgufFile's mapping (no copy). The API mirrors runtime::Model, so the graph code reads the same
// for both backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/model/weight_names.h"
#include "engine/runtime/tensor_data_source.h"

namespace vkllm::runtime {

struct HostTensor {
  std::string name;
  gguf::TensorType type{};
  std::vector<uint64_t> shape;  // ggml order: shape[0] contiguous
  // The tensor's bytes, rows back to back. Copies start on kHostTensorAlign bytes; tensors in a
  // mapped file on the file's alignment (GGUF: 32 unless general.alignment says otherwise).
  // Nothing past data + bytes may be read: a mapped tensor can end at the end of the mapping.
  const std::byte* data = nullptr;
  uint64_t bytes = 0;
  // Stacked experts' gate or up half (gguf::TensorInfo::expert_stride): expert e's bytes / shape[2]
  // bytes start at data + e * expert_stride, the other half's rows between them. 0: packed.
  uint64_t expert_stride = 0;
  uint64_t cols() const { return shape[0]; }
  uint64_t rows() const { return shape.size() > 1 ? shape[1] : 1; }
};

// Where copied tensors start (a cache line; every SIMD load width the CPU kernels use).
inline constexpr size_t kHostTensorAlign = 64;

// How a model over a mapped GGUF holds its weights. Decode streams every weight once per token,
// and a page-cache mapping is mostly 4 KiB pages (a file written or read in small pieces stays
// so): measured on the 1B fixtures at 2 threads, decode from a copy on transparent huge pages
// ran 1.1-1.3x faster than from the mapping (Q4_K_M and F16, interleaved runs).
enum class MappedWeights : uint8_t {
  // Copy when the file holds at least kCopyMinBytes of weights and they take at most half of
  // the memory the system has available; else in place.
  Auto,
  InPlace,  // pointers into the mapping
  Copy,     // copied onto huge pages
};

// Below this a model's weights stay in the mapping under MappedWeights::Auto: they are read from
// the caches more than from DRAM, and a copy would only add load time.
inline constexpr uint64_t kCopyMinBytes = uint64_t(64) << 20;

class HostModel {
 public:
  // Copies the weights of `header` (metadata and tensor table; may be header-only) read through
  // `source`, in file order so a streaming source reads forward only. `header` need not outlive
  // the model.
  HostModel(const gguf::GgufFile& header, TensorDataSource& source);
  // The weights of a mapped `file`, copied or in place as `how` says; in place, `file` must
  // outlive the model. Throws std::invalid_argument for a header-only file (it has no tensor data).
  explicit HostModel(const gguf::GgufFile& file, MappedWeights how = MappedWeights::Auto);
  // The same, owning the file (and so its mapping) for the model's lifetime.
  explicit HostModel(gguf::GgufFile&& file, MappedWeights how = MappedWeights::Auto);
  HostModel(const HostModel&) = delete;
  HostModel& operator=(const HostModel&) = delete;
  ~HostModel();

  const model::ModelSpec& spec() const { return spec_; }
  // The weight, or nullptr when the model does not have it (e.g. biases).
  const HostTensor* find(model::Weight w, uint32_t layer = 0) const;
  // The weight; throws naming it when absent.
  const HostTensor& get(model::Weight w, uint32_t layer = 0) const;
  // The projection to logits (output.weight, or the embeddings when tied).
  const HostTensor& output() const;
  // Sum of the tensors' sizes.
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Heap memory this model holds for weights (0 when it points into a mapping).
  uint64_t copied_bytes() const { return copied_bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  void copy_from(const gguf::GgufFile& header, TensorDataSource& source);
  void place_mapped(const gguf::GgufFile& file, MappedWeights how);
  void index_mapped(const gguf::GgufFile& file);
  void add_derived();

  std::optional<gguf::GgufFile> owned_file_;  // first: the tensors may point into it
  std::unique_ptr<std::byte, Free> storage_;
  model::ModelSpec spec_;
  std::unordered_map<std::string, HostTensor> tensors_;
  uint64_t weight_bytes_ = 0;
  uint64_t copied_bytes_ = 0;
};

}  // namespace vkllm::runtime
