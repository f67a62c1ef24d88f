#include "server/models/model_quantize.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"
#include "registry/errors.h"
#include "server/scheduler/blob_model_source.h"

namespace vkllm::models {

using gguf::TensorType;
using model::FileType;
using registry::ErrorKind;
using registry::RegistryError;

namespace {

constexpr FileType kTargets[] = {FileType::F32,    FileType::F16,    FileType::BF16,
                                 FileType::Q4_K_S, FileType::Q4_K_M, FileType::Q5_K_M,
                                 FileType::Q6_K,   FileType::Q8_0};

bool is_float(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// "blk.12.attn_v.weight" → 12; 0 for tensors outside the blocks.
uint32_t layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return 0;
  uint32_t n = 0;
  for (size_t i = 4; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    n = n * 10 + static_cast<uint32_t>(name[i] - '0');
  }
  return n;
}

// The source's file type for the status line: general.file_type when it names a float type,
// else the type most of its matrices have.
std::string source_type_name(const gguf::GgufFile& g) {
  if (auto ft = g.get_optional<uint32_t>("general.file_type")) {
    const auto t = static_cast<FileType>(*ft);
    if (t == FileType::F32 || t == FileType::F16 || t == FileType::BF16) {
      return std::string(model::file_type_name(t));
    }
  }
  for (const auto& t : g.tensors()) {
    if (t.shape.size() < 2) continue;
    std::string name(gguf::type_name(t.type));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    return name;
  }
  return "F32";
}

struct Cancelled {};

}  // namespace

FileType parse_quantize_type(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  if (upper == "Q4_K") upper = "Q4_K_M";  // Ollama's alias
  if (const auto t = model::file_type_from_name(upper)) {
    if (std::find(std::begin(kTargets), std::end(kTargets), *t) != std::end(kTargets)) return *t;
  }
  std::string list;
  for (FileType t : kTargets) list += (list.empty() ? "" : ", ") + std::string(file_type_name(t));
  throw RegistryError(ErrorKind::invalid_input,
                      "unsupported quantization type " + upper + " - supported types are " + list);
}

std::optional<registry::Digest> quantize_blob(registry::ModelStore& store,
                                              const registry::Digest& source, FileType target,
                                              const QuantizeProgress& progress,
                                              std::stop_token stop) {
  const gguf::GgufFile header = sched::read_gguf_header(store.blobs(), source);
  uint64_t total = 0;
  for (const auto& t : header.tensors()) {
    if (!is_float(t.type)) {
      throw RegistryError(ErrorKind::invalid_input,
                          "quantization is only supported for F16, BF16 and F32 models");
    }
    total += t.byte_size;
  }
  const std::string status = "quantizing " + source_type_name(header) + " model to " +
                             std::string(model::file_type_name(target));
  const std::string arch = header.get_optional<std::string>("general.architecture").value_or("");
  const uint32_t n_layer = header.get_optional<uint32_t>(arch + ".block_count").value_or(1);
  const bool has_output = header.find_tensor("output.weight") != nullptr;
  const uint32_t n_expert = header.get_optional<uint32_t>(arch + ".expert_count").value_or(0);

  gguf::GgufWriter writer;
  writer.copy_metadata(header, "");
  writer.set_u32("general.file_type", static_cast<uint32_t>(target));
  if (model::is_quantized(target)) writer.set_u32("general.quantization_version", 2);

  registry::BlobReader reader = store.blobs().open(source);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  uint64_t completed = 0;
  progress(status, 0, total);
  for (const auto& t : header.tensors()) {
    const model::TensorSlot slot{t.name, t.shape, layer_of(t.name), n_layer, has_output, n_expert};
    const TensorType to = choose_tensor_type(target, slot);
    // The tensor's infos outlive the writer's fill calls: `header` is alive until write_to ends.
    writer.add_lazy_tensor(t.name, to, t.shape, [&, to, info = &t](std::span<uint8_t> out) {
      if (stop.stop_requested()) throw Cancelled{};
      std::vector<std::byte> raw(info->byte_size);
      if (info->strided()) {
        // Stacked experts' gate or up half: expert by expert (written as a split tensor).
        const uint64_t n = info->expert_bytes();
        for (uint64_t e = 0; e < info->shape[2]; ++e) {
          reader.read_at(
              header.data_offset() + info->offset + info->expert_skip + e * info->expert_stride,
              std::span(raw).subspan(e * n, n));
        }
      } else {
        reader.read_at(header.data_offset() + info->offset, raw);
      }
      if (to == info->type) {
        std::memcpy(out.data(), raw.data(), raw.size());
      } else {
        const size_t n = info->element_count();
        std::vector<float> values(n);
        gguf::dequantize(info->type, raw.data(), values.data(), n, threads);
        gguf::quantize(to, values.data(), out.data(), n, threads);
      }
      completed += info->byte_size;
      progress(status, completed, total);
    });
  }
  registry::BlobWriter blob = store.blobs().begin_write();
  try {
    writer.write_to([&](std::span<const uint8_t> bytes) { blob.write(std::as_bytes(bytes)); });
  } catch (const Cancelled&) {
    return std::nullopt;  // the uncommitted writer removes its temp file
  }
  return store.commit_blob(blob, std::nullopt).digest;
}

}  // namespace vkllm::models
