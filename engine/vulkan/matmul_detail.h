// What the matmul kernels' source files share (matmul_ops.cpp records the products and the GEMMs,
// matvec_ops.cpp the decode products, matvec_epilogues.cpp those with fused epilogues,
// matmul_cm2.cpp the workgroup-scope GEMM): each weight type's kernel description, the argument
// checks and the push constants. Not part of the module's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/command_recorder.h"
#include "engine/vulkan/matmul_ops.h"

namespace vkllm::vk::detail {

struct KernelType {
  const char* name;         // variant suffix
  uint32_t block_elements;  // GGUF block size: cols must be a multiple
  uint32_t block_bytes;
  uint32_t unit;  // weights one thread decodes at a time (UNIT in dequant_weights.glsl)
};

// The kernels for weights of `type`, if any.
std::optional<KernelType> kernel_type(gguf::TensorType type);
std::string type_label(gguf::TensorType type);

// Checks the arguments against the kernels' rules and returns the type's kernel description;
// throws std::invalid_argument naming `op` and the offending argument.
KernelType validate(const char* op, const MatmulArgs& a);

// Vectors per matvec dispatch: two pipelines per type, not one per batch size; columns beyond the
// batch are skipped by a uniform branch, which costs far less than compiling (and, on lavapipe,
// JIT-ing) more variants.
inline uint32_t columns_per_pass(uint32_t batch) {
  return batch <= 1 ? 1 : MatmulKernels::kMaxMatvecColumns;
}

// Push constants shared by matvec.comp and matmul.comp.
struct Push {
  uint32_t n_rows, k, n_cols, x_stride, y_stride, w_off, x_off, y_off, flags;
};

Push make_push(const MatmulArgs& a);

// The workgroup-scope GEMM's tile (matmul_cm2.comp): weight rows, tokens (narrow up to that many
// tokens, else wide) and K per slice, on kCoopMat2Invocations (device.h) invocations. 64-wide
// slices against 32 on an H100, prefill 512: 8B Q4_K_M 9815-9849 -> 11581-11620 tok/s, 8B Q8_0
// 9631-9711 -> 11482-11486, 1B F16 55910-56551 -> 63936-64050, 1B Q4_K_M 49567-49600 ->
// 53299-55963; 1B F16 at 64 sequences 19087-19342 -> 22076-22164. 128-wide slices ran at half
// speed or less, as did 256-row or 256-token tiles; 256 invocations lost 11% (8B Q4_K_M 10257).
inline constexpr uint32_t kCoopMat2Rows = 128, kCoopMat2NarrowTokens = 64,
                          kCoopMat2WideTokens = 128, kCoopMat2SliceK = 64;

// The RoPE/KV variant `shader` of a matvec (push: the product's), x its activations (q8 or f32).
void dispatch_rope_kv(PipelineCache& pipelines, CommandRecorder& rec, const MatmulArgs& args,
                      const std::string& shader, const Push& push, const RopeKvEpilogue& e,
                      BufferSlice x, std::vector<uint32_t> spec, Groups groups);

}  // namespace vkllm::vk::detail
