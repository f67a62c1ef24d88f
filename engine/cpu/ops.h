// The CPU backend's small kernels, with the Vulkan kernels' semantics (engine/vulkan/ops.h):
// embedding lookup, RMSNorm / LayerNorm, element-wise ops, gated activations, RoPE, paged KV
// writes, pooling, argmax. Attention is in engine/cpu/attention.h.
//
// Every function does one slice of its work, [begin, end) in the unit its comment names (a row,
// an element, a token, a sequence), so the backend splits a call over its thread pool; slices
// never write the same memory, and no function keeps state between calls. The trailing `isa`
// picks the code path (lowered to what the CPU supports; engine/cpu/isa.h). Pointers are plain
// host memory, f32 unless stated; strides are in elements.
#pragma once

#include <array>
#include <cstdint>

#include "engine/cpu/batch_view.h"
#include "engine/cpu/isa.h"
#include "engine/gguf/tensor_type.h"
#include "engine/kv/kv_cache_type.h"

namespace vkllm::cpu {

// ---- Embedding lookup. Unit: a token. out[t] = scale * dequant(weights row ids[t]) for any type
// engine/gguf can dequantize (gguf::can_dequantize); ids >= n_rows give NaN rows, or with `part`
// (a table split by rows: weights holds rows first_row ..) tokens outside are left unwritten.
struct GetRowsArgs {
  gguf::TensorType type = gguf::TensorType::F32;
  const void* weights = nullptr;
  uint32_t row_elems = 0;  // a multiple of the type's block size
  uint64_t row_bytes = 0;  // 0: gguf::row_bytes(type, row_elems)
  uint32_t n_rows = 0;
  const uint32_t* ids = nullptr;
  float* out = nullptr;
  uint32_t out_stride = 0;  // 0: row_elems
  float scale = 1.0f;
  bool part = false;
  uint32_t first_row = 0;
};
// Throws std::invalid_argument for a type without a dequantizer or a bad row length.
void get_rows(const GetRowsArgs& a, uint32_t token_begin, uint32_t token_end);

// ---- RMSNorm. Unit: a row. h = x (+ residual, stored back into x), y = h / rms(h) * weight.
struct RmsNormArgs {
  float* x = nullptr;               // read, and written when residual is given
  const float* residual = nullptr;  // optional fused residual add (same stride as x)
  const float* weight = nullptr;    // optional: n elements
  float* y = nullptr;               // may be x
  uint32_t n = 0;
  uint32_t x_stride = 0;  // 0: n
  uint32_t y_stride = 0;  // 0: n
  float eps = 1e-5f;
};
void rms_norm(const RmsNormArgs& a, uint32_t row_begin, uint32_t row_end, Isa isa = selected_isa());

// ---- LayerNorm with weight and bias. Unit: a row of n contiguous elements; y may be x.
struct LayerNormArgs {
  const float* x = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  uint32_t n = 0;
  float eps = 1e-12f;
};
void layer_norm(const LayerNormArgs& a, uint32_t row_begin, uint32_t row_end);

// ---- Element-wise. Unit: an element index i; out may alias a.
void add(const float* a, const float* b, float* out, uint32_t begin, uint32_t end,
         Isa isa = selected_isa());
void mul(const float* a, const float* b, float* out, uint32_t begin, uint32_t end,
         Isa isa = selected_isa());
void scale(const float* a, float* out, float s, uint32_t begin, uint32_t end,
           Isa isa = selected_isa());
// out = cap * tanh(a / cap)
void softcap(const float* a, float* out, float cap, uint32_t begin, uint32_t end,
             Isa isa = selected_isa());
// out = gelu(a), tanh approximation as ggml computes it
void gelu(const float* a, float* out, uint32_t begin, uint32_t end, Isa isa = selected_isa());
// Unit: a row. x[r * stride + i] += bias[i] for i < n (stride 0: n).
void add_bias(float* x, const float* bias, uint32_t n, uint32_t stride, uint32_t row_begin,
              uint32_t row_end, Isa isa = selected_isa());

// ---- Gated FFN activation. Unit: a row. out = act(gate) * up.
enum class GluActivation : uint32_t { Silu = 0, GeluTanh = 1 };
struct GluArgs {
  const float* gate = nullptr;  // gate and up may point into one fused gate|up buffer
  const float* up = nullptr;
  float* out = nullptr;
  uint32_t n = 0;
  GluActivation act = GluActivation::Silu;
  uint32_t gate_stride = 0, up_stride = 0, out_stride = 0;  // 0: n
};
void glu(const GluArgs& a, uint32_t row_begin, uint32_t row_end, Isa isa = selected_isa());

// ---- RoPE and paged KV writes (cache and metadata layout: engine/kv/kv_layout.h).
struct RopeParams {
  uint32_t head_dim = 0;
  uint32_t n_dims = 0;  // rotated dimensions (even); 0: head_dim
  bool neox = false;    // (i, i + n_dims/2) pairs instead of (2i, 2i+1)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  const float* freq_factors = nullptr;  // optional n_dims/2 divisors (Llama 3 rope_freqs)
  // rope() only: the row is then multiplied by
  // 1 + temp_scale * ln(floor((pos + temp_offset) / temp_floor) + 1) (attention temperature
  // tuning of queries); temp_scale 0: off. rotate false: rows copied unrotated (NoPE layers).
  float temp_scale = 0.0f;
  uint32_t temp_floor = 0;
  uint32_t temp_offset = 0;
  bool rotate = true;
  // M-RoPE (runtime RopeSpec::mrope_sections): nonzero sections and 3 positions (t, h, w) per
  // batch token; pair i turns by the position its section names instead of the token's.
  std::array<uint32_t, 4> mrope_sections{};
  const uint32_t* mrope_pos = nullptr;
  // Qwen3-VL's interleaved layout (RopeSpec::mrope_interleaved).
  bool mrope_interleaved = false;
};
// Head h of token t at data + t * stride + h * head_dim.
struct HeadRows {
  float* data = nullptr;
  uint32_t stride = 0;  // 0: n_heads * head_dim
};
struct ConstHeadRows {
  const float* data = nullptr;
  uint32_t stride = 0;
  ConstHeadRows() = default;
  ConstHeadRows(const float* d, uint32_t s) : data(d), stride(s) {}
  ConstHeadRows(HeadRows r) : data(r.data), stride(r.stride) {}  // NOLINT: a view narrows
};
// One layer's K or V region: [num_blocks][n_kv_heads][block_size] rows of head_dim values, f16
// (as bits) or quantized (engine/kv/kv_cache_type.h: kv::row_words(type, head_dim) words a row).
struct CacheRegion {
  uint16_t* data = nullptr;
  uint32_t n_kv_heads = 0;
  uint32_t block_size = 16;
  kv::CacheType type = kv::CacheType::F16;
};
// Unit: a batch token (all n_heads heads of it). dst = rope(src); dst may alias src. The angle
// of pair i at position p is p * freq_scale * freq_base^(-2i / n_dims) / freq_factor[i].
void rope(const RopeParams& rope, const BatchView& batch, ConstHeadRows src, HeadRows dst,
          uint32_t n_heads, uint32_t token_begin, uint32_t token_end, Isa isa = selected_isa());
// Unit: a batch token. Writes the token's n_kv_heads rows of src (f32) into its cache slot
// (block from the sequence's table, slot pos % block_size), rotated first when `rope` is given
// (K) and copied otherwise (V). f16: round to nearest even, as the Vulkan kernel's packHalf2x16;
// q8_0 / q4_0: quantize_kv_row (engine/cpu/kv_rows.h).
void write_kv(const RopeParams* rope, const BatchView& batch, ConstHeadRows src, uint32_t head_dim,
              const CacheRegion& cache, uint32_t token_begin, uint32_t token_end,
              Isa isa = selected_isa());

// ---- Pooling (embedding models). Unit: a sequence of the batch. out[s] = the mean, first or
// last of the sequence's rows of x (n contiguous elements each).
enum class PoolMode : uint32_t { Mean = 0, First = 1, Last = 2 };
void pool_rows(PoolMode mode, const BatchView& batch, const float* x, uint32_t n, float* out,
               uint32_t seq_begin, uint32_t seq_end);

// ---- Greedy sampling. Unit: a row. out[r] = the index of the largest of the n logits of row r
// (lowest index on ties; NaN never wins; 0 when nothing compares, as the Vulkan kernel).
void argmax(const float* logits, uint32_t n, uint32_t stride, uint32_t* out, uint32_t row_begin,
            uint32_t row_end, Isa isa = selected_isa());

}  // namespace vkllm::cpu
