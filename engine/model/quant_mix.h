// Which tensor type llama.cpp gives each weight of a model for a given file type
// (llama_ftype), so generated models carry the same mix of formats as real downloads.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/gguf/tensor_type.h"

namespace vkllm::model {

// File types with llama.cpp's numeric ids (the value of general.file_type).
enum class FileType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 7,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_M = 17,
  Q6_K = 18,
  BF16 = 32,
  MXFP4_MOE = 38,  // stacked expert tensors MXFP4, other matrices Q8_0 (gpt-oss's published mix)
};

// "Q4_K_M", "q8_0", "BF16", "MXFP4_MOE" (alias "MXFP4"), ... (case-insensitive); nullopt for
// anything else.
std::optional<FileType> file_type_from_name(std::string_view name);
std::string_view file_type_name(FileType type);
bool is_quantized(FileType type);  // false for F32 / F16 / BF16

struct TensorSlot {
  std::string_view name;        // GGUF name, e.g. "blk.3.attn_v.weight"
  std::vector<uint64_t> shape;  // ggml order
  uint32_t layer = 0;           // for per-layer tensors
  uint32_t n_layer = 1;
  bool model_has_output = true;  // false when token_embd doubles as the output projection
  uint32_t n_expert = 0;         // <arch>.expert_count of a mixture-of-experts model
};

// llama.cpp's choice: 1-D tensors, norms and rope factors stay F32; the output projection gets
// Q6_K (Q8_0 files keep Q8_0); Q4_K_M / Q5_K_M give attn_v and ffn_down Q6_K on the layers
// llama.cpp's use_more_bits picks and fused attn_qkv one step more; Q4_K_S gives attn_v of the
// first 4 layers and ffn_down of the first eighth Q5_K (imatrix-free, non-Falcon); rows that do not
// fit a K-quant's 256-element blocks fall back to Q5_0 / Q5_1 / Q8_0, and to F16 if even that
// fails. Models of exactly 8 experts get attn_k and attn_v Q8_0 and (Q4_K_S/M) attn_output Q5_K;
// the MoE router (ffn_gate_inp) stays F32. MXFP4_MOE gives stacked expert tensors (a third
// dimension over 1) MXFP4 and every other matrix, the output projection included, Q8_0.
gguf::TensorType choose_tensor_type(FileType file_type, const TensorSlot& slot);

}  // namespace vkllm::model
