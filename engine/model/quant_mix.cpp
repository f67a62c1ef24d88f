#include "engine/model/quant_mix.h"

#include <string>

namespace vkllm::model {

namespace {

using gguf::TensorType;

struct FileTypeName {
  FileType type;
  std::string_view name;
};
constexpr FileTypeName kFileTypes[] = {
    {FileType::F32, "F32"},         {FileType::F16, "F16"},
    {FileType::BF16, "BF16"},       {FileType::Q4_0, "Q4_0"},
    {FileType::Q8_0, "Q8_0"},       {FileType::Q4_K_S, "Q4_K_S"},
    {FileType::Q4_K_M, "Q4_K_M"},   {FileType::Q5_K_M, "Q5_K_M"},
    {FileType::Q6_K, "Q6_K"},       {FileType::MXFP4_MOE, "MXFP4_MOE"},
    {FileType::MXFP4_MOE, "MXFP4"},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

TensorType base_type(FileType t) {
  switch (t) {
    case FileType::F32:
      return TensorType::F32;
    case FileType::F16:
      return TensorType::F16;
    case FileType::BF16:
      return TensorType::BF16;
    case FileType::Q4_0:
      return TensorType::Q4_0;
    case FileType::Q8_0:
    case FileType::MXFP4_MOE:  // for everything but the experts
      return TensorType::Q8_0;
    case FileType::Q4_K_S:
    case FileType::Q4_K_M:
      return TensorType::Q4_K;
    case FileType::Q5_K_M:
      return TensorType::Q5_K;
    case FileType::Q6_K:
      return TensorType::Q6_K;
  }
  return TensorType::F32;
}

// llama.cpp spends more bits on the first and last eighth of the layers and on every third
// layer in between.
bool use_more_bits(uint32_t layer, uint32_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

uint64_t block_of(TensorType t) {
  return gguf::traits(t).block_elements;
}

}  // namespace

std::optional<FileType> file_type_from_name(std::string_view name) {
  for (const auto& e : kFileTypes) {
    if (iequals(e.name, name)) return e.type;
  }
  return std::nullopt;
}

std::string_view file_type_name(FileType type) {
  for (const auto& e : kFileTypes) {
    if (e.type == type) return e.name;
  }
  return "?";
}

bool is_quantized(FileType type) {
  return type != FileType::F32 && type != FileType::F16 && type != FileType::BF16;
}

TensorType choose_tensor_type(FileType file_type, const TensorSlot& slot) {
  const std::string_view name = slot.name;
  const bool matrix = slot.shape.size() >= 2;
  // The MoE router stays F32 (convert_hf_to_gguf.py writes it so, llama-quantize skips it).
  // The hybrids' small conv kernels too (llama-quantize leaves them; ggml's conv reads F32).
  if (!matrix || !name.ends_with("weight") || contains(name, "_norm.weight") ||
      name == "rope_freqs.weight" || contains(name, "ffn_gate_inp.weight") ||
      contains(name, "ssm_conv1d") || contains(name, "shortconv.conv.weight")) {
    return TensorType::F32;
  }
  TensorType type = base_type(file_type);
  if (!is_quantized(file_type)) return type;

  const uint64_t row = slot.shape[0];
  const bool k_mix = file_type == FileType::Q4_K_M || file_type == FileType::Q5_K_M;
  const bool is_output =
      name == "output.weight" || (!slot.model_has_output && name == "token_embd.weight");
  if (file_type == FileType::MXFP4_MOE) {
    // llama-quantize's MXFP4_MOE: MXFP4 for the stacked experts, Q8_0 for the rest.
    if (slot.shape.size() >= 3 && slot.shape[2] > 1) type = TensorType::MXFP4;
  } else if (is_output) {
    if (row % block_of(type) != 0) {
      type = TensorType::Q8_0;
    } else if (type != TensorType::Q8_0) {
      type = TensorType::Q6_K;
    }
  } else if (contains(name, "attn_v.weight") || contains(name, "ffn_down")) {
    if (k_mix && use_more_bits(slot.layer, slot.n_layer)) type = TensorType::Q6_K;
    if (file_type == FileType::Q4_K_S) {
      const bool v = contains(name, "attn_v.weight");
      if ((v && slot.layer < 4) || (!v && slot.layer < slot.n_layer / 8)) type = TensorType::Q5_K;
    }
    if (slot.n_expert == 8 && contains(name, "attn_v.weight")) type = TensorType::Q8_0;
  } else if (contains(name, "attn_k.weight") && slot.n_expert == 8) {
    type = TensorType::Q8_0;
  } else if (contains(name, "attn_output.weight") && slot.n_expert == 8 &&
             (file_type == FileType::Q4_K_S || file_type == FileType::Q4_K_M)) {
    type = TensorType::Q5_K;
  } else if (contains(name, "attn_qkv.weight")) {
    if (file_type == FileType::Q4_K_M) type = TensorType::Q5_K;
    if (file_type == FileType::Q5_K_M) type = TensorType::Q6_K;
  }

  // Rows that do not fill whole blocks: the nearest legacy format, else F16 (llama.cpp refuses
  // such legacy-format tensors outright; F16 keeps odd test shapes usable).
  if (row % block_of(type) != 0) {
    switch (type) {
      case TensorType::Q4_K:
        type = TensorType::Q5_0;
        break;
      case TensorType::Q5_K:
        type = TensorType::Q5_1;
        break;
      case TensorType::Q6_K:
        type = TensorType::Q8_0;
        break;
      default:
        type = TensorType::F16;
        break;
    }
    if (row % block_of(type) != 0) type = TensorType::F16;
  }
  return type;
}

}  // namespace vkllm::model
