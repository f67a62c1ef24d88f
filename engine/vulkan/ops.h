// Recording the small (non-matmul) kernels: embedding lookup, RMSNorm, element-wise ops, gated
// activations, RoPE and KV-cache writes, argmax. Each function records one dispatch (no barrier:
// the caller places barriers where a later dispatch reads the result).
//
// Buffers are BufferSlices bound as given (offset a multiple of the device's storage alignment);
// element strides and offsets below are in elements of the slice. f32 unless stated.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "engine/kv/kv_cache_type.h"
#include "engine/vulkan/buffer.h"

namespace vkllm::vk {
class CommandRecorder;
class PipelineCache;
struct DeviceCapabilities;
}  // namespace vkllm::vk

namespace vkllm::vk::ops {

// ---- Embedding lookup: out[t] = scale * dequant(weights row ids[t]).
struct GetRowsArgs {
  std::string_view type;   // ggml type name ("f32", "f16", "bf16", "q4_0", "q8_0", "q4_K", ...)
  BufferSlice weights;     // the whole tensor; must stay readable 16 bytes past its end
  uint32_t row_elems = 0;  // K, a multiple of the type's block size
  uint32_t row_bytes = 0;  // bytes per row
  uint32_t n_rows = 0;     // vocabulary size; ids >= n_rows produce NaN rows
  BufferSlice ids;         // uint32 token ids
  uint32_t n_tokens = 0;
  BufferSlice out;
  uint32_t out_stride = 0;  // 0: row_elems
  float scale = 1.0f;       // Gemma: sqrt(n_embd)
  // One part of a table split by rows: `weights` holds rows first_row.. first_row + n_rows - 1;
  // tokens whose ids fall outside are left unwritten (another part's dispatch writes them).
  bool part = false;
  uint32_t first_row = 0;
};
bool get_rows_supports(std::string_view type);
void get_rows(CommandRecorder& rec, PipelineCache& pipelines, const GetRowsArgs& a);

// ---- RMSNorm: h = x (+ residual, stored back into x), y = h / rms(h) * weight.
struct RmsNormArgs {
  BufferSlice x;         // read (and written when residual is given)
  BufferSlice residual;  // optional: fused residual add
  BufferSlice weight;    // optional: n elements; empty = no weight multiply
  BufferSlice y;         // may be x itself
  uint32_t n = 0;        // row length
  uint32_t n_rows = 1;
  uint32_t x_stride = 0;  // 0: n (applies to residual too)
  uint32_t y_stride = 0;  // 0: n
  float eps = 1e-5f;
  // Optional: y also as q8 blocks (MatmulKernels::record_quantize_q8's layout) for the int8-dot
  // matvec; needs subgroup arithmetic, n a multiple of 32 and y_stride = n.
  BufferSlice q8{};
  // Optional (not with q8): y also as f16 rows of n halves, as the tensor-core GEMM reads them
  // (MatmulArgs::x_f16); needs subgroup arithmetic, n a multiple of 32 of at most 16384.
  BufferSlice f16{};
  // Optional (not with residual or f16; rms_norm_fuses_gate): y *= silu(g) after the weight, g
  // of row r at element gate_off + (r / gate_group) * gate_stride + (r % gate_group) * n.
  BufferSlice gate{};
  uint32_t gate_off = 0, gate_stride = 0, gate_group = 1;
  // Optional (not with residual, gate or f16; rms_norm_fuses_gate's conditions): y = post_add +
  // the normed row (a post-norm's residual; y may be post_add), rows at x_stride as x's.
  BufferSlice post_add{};
  // Optional (with post_add; the register-blocked kernel's conditions): the next norm in the same
  // pass. y, the new residual (times scale's first value where scale is given), is normed by
  // next_weight into next_y (dense rows of n); q8 / f16 then hold next_y's copy.
  BufferSlice next_weight{}, next_y{}, scale{};
};
void rms_norm(CommandRecorder& rec, PipelineCache& pipelines, const RmsNormArgs& a);
// Whether rms_norm() writes RmsNormArgs::f16 for rows of n (with vec4-aligned strides and no q8
// output): subgroup arithmetic, n a multiple of 32 of at most 16384.
bool rms_norm_writes_f16(uint32_t n, const DeviceCapabilities& caps);
// Whether rms_norm() can apply RmsNormArgs::gate to rows of n with these gate offset and stride
// (and vec4-aligned x and y strides): the register-blocked kernel's conditions.
bool rms_norm_fuses_gate(uint32_t n, uint32_t gate_off, uint32_t gate_stride,
                         const DeviceCapabilities& caps);

// ---- LayerNorm with weight and bias (encoders): y = (x - mean) / sqrt(var + eps) * w + b per
// row of n contiguous elements; y may be x itself.
struct LayerNormArgs {
  BufferSlice x, weight, bias, y;
  uint32_t n = 0;
  uint32_t n_rows = 1;
  float eps = 1e-12f;
};
void layer_norm(CommandRecorder& rec, PipelineCache& pipelines, const LayerNormArgs& a);

// ---- Element-wise over n elements (out may alias a).
void add(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice b,
         BufferSlice out, uint32_t n);
void mul(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice b,
         BufferSlice out, uint32_t n);
void scale(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice out,
           uint32_t n, float s);
// out = cap * tanh(a / cap)
void softcap(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice out,
             uint32_t n, float cap);
// x[r * n + i] += bias[i] for every row r < n_rows (projection biases).
void add_bias(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice x, BufferSlice bias,
              uint32_t n, uint32_t n_rows);
// out = gelu(a) (tanh approximation, as ggml), out = tanh(in_scale * a)
void gelu(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice out,
          uint32_t n);
void tanh(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice out,
          uint32_t n, float in_scale = 1.0f);
// out = clamp(a, lo, hi) (Gemma 4's vision tower: its clipped linear layers' bounds)
void clamp(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice a, BufferSlice out,
           uint32_t n, float lo, float hi);

// ---- Gated FFN activation: out = act(gate) * up, row by row.
// SwigluOai: gpt-oss's clamped SwiGLU, GeluQuick: x * sigmoid(1.702 x) (glu_activation.glsl).
enum class GluActivation : uint32_t { Silu = 0, GeluTanh = 1, SwigluOai = 2, GeluQuick = 3 };
struct GluArgs {
  BufferSlice gate, up, out;  // gate and up may be slices of one fused gate|up buffer
  uint32_t n = 0;             // elements per row
  uint32_t n_rows = 1;
  GluActivation act = GluActivation::Silu;
  uint32_t gate_stride = 0, up_stride = 0, out_stride = 0;  // 0: n
  uint32_t gate_off = 0, up_off = 0;  // elements into gate and up before their first row
  // Optional: out also as q8 blocks (record_quantize_q8's layout); n a multiple of 32.
  BufferSlice q8{};
  // gate and up as a split-K product's unsummed partials (MatmulKernels::SplitParts): each the sum
  // of `splits` partials split_stride floats apart.
  uint32_t splits = 1, split_stride = 0;
  // Optional (not with q8): out also as f16 rows of n halves, as the tensor-core GEMM reads them
  // (MatmulArgs::x_f16); n even.
  BufferSlice f16{};
};
void glu(CommandRecorder& rec, PipelineCache& pipelines, const GluArgs& a);

// ---- RoPE and paged KV writes (see engine/kv/kv_layout.h for the cache and metadata).
struct RopeParams {
  uint32_t head_dim = 0;
  uint32_t n_dims = 0;  // rotated dimensions; 0: head_dim
  bool neox = false;    // (i, i + n_dims/2) pairs instead of (2i, 2i+1)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  BufferSlice freq_factors;  // optional n_dims/2 floats (Llama 3 rope_freqs)
  // rope() only: rows are then multiplied by
  // 1 + temp_scale * ln(floor((pos + temp_offset) / temp_floor) + 1) (attention temperature
  // tuning of queries); temp_scale 0: off. rotate false: rows copied unrotated (NoPE layers).
  float temp_scale = 0.0f;
  uint32_t temp_floor = 0;
  uint32_t temp_offset = 0;
  bool rotate = true;
  // M-RoPE (runtime RopeSpec::mrope_sections): with nonzero sections, pair i turns by the
  // position its section names among the token's three (t, h, w) in mrope_pos.
  std::array<uint32_t, 4> mrope_sections{};
  BufferSlice mrope_pos{};
  bool mrope_interleaved = false;  // Qwen3-VL's layout (runtime RopeSpec::mrope_interleaved)
};
// A per-head RMS norm applied to each row before rope() rotates it or write_kv() stores it
// (Qwen3's and Gemma's Q/K norms; an empty weight: a plain norm, Gemma 4's V).
struct HeadNorm {
  BufferSlice weight;  // head_dim values, or empty
  float eps = 1e-6f;
};
struct HeadRows {
  BufferSlice data;  // f32; head h of token t at off + t*stride + h*head_dim
  uint32_t off = 0;
  uint32_t stride = 0;  // 0: n_heads * head_dim
  // As a source of rope() and write_kv(): each row the sum of `splits` partials (a split-K
  // product's, MatmulKernels::SplitParts) split_stride elements apart.
  uint32_t splits = 1, split_stride = 0;
};
struct BatchInfo {
  BufferSlice meta;  // kv::BatchMeta::words on the device
  uint32_t n_tokens = 0;
  uint32_t n_seqs = 0;
  // Some sequence keeps its recurrent states after each token (kv::BatchSequence::capture_from):
  // the recurrent kernels run it whatever its length.
  bool captures = false;
};
// dst = rope(src) for n_heads heads of every batch token (each row normed first by `norm` where
// given); dst may alias src.
void rope(CommandRecorder& rec, PipelineCache& pipelines, const RopeParams& rope,
          const BatchInfo& batch, const HeadRows& src, const HeadRows& dst, uint32_t n_heads,
          const HeadNorm* norm = nullptr);
// Writes every batch token's n_kv_heads rows of src into the layer's cache region (f16, or
// quantized: engine/kv/kv_cache_type.h) at its block slot; normed first by `norm` where given,
// then rotated when `rope` is given (K), copied otherwise (V).
struct CacheRegion {
  BufferSlice data;  // one layer's K or V region
  uint32_t n_kv_heads = 0;
  uint32_t block_size = 16;
  kv::CacheType type = kv::CacheType::F16;
};
void write_kv(CommandRecorder& rec, PipelineCache& pipelines, const RopeParams* rope,
              const BatchInfo& batch, const HeadRows& src, uint32_t head_dim,
              const CacheRegion& cache, const HeadNorm* norm = nullptr);

// ---- Pixtral's 2D RoPE (engine/vision/rope_2d.h), in place: token t's row at x + t * stride,
// n_head heads of head_dim (a multiple of 4), its (row, column) at pos[2t], pos[2t + 1] (u32).
// halves: Qwen2.5-VL's vision RoPE instead (engine/vision/qwen_vl.h rope_vision).
struct Rope2dArgs {
  BufferSlice x, pos;
  uint32_t n_tokens = 0, n_head = 0, head_dim = 0, stride = 0;
  float theta = 10000.0f;
  bool halves = false;
};
void rope_2d(CommandRecorder& rec, PipelineCache& pipelines, const Rope2dArgs& a);

// ---- Pooling (embedding models): out[s] = the mean, first or last of sequence s's rows of x
// (n elements each; sequences as in the step's batch metadata).
enum class PoolMode : uint32_t { Mean = 0, First = 1, Last = 2 };
void pool_rows(CommandRecorder& rec, PipelineCache& pipelines, PoolMode mode,
               const BatchInfo& batch, BufferSlice x, uint32_t n, BufferSlice out);

// ---- LFM2's gated short convolution of every batch token (runtime::ShortConvSpec;
// shaders/short_conv.comp): out = C * conv(B * X) per channel over each sequence, with the
// sequence's recurrent state (slot from the batch metadata) before its first token; the state
// is updated in place.
struct ShortConvArgs {
  BufferSlice bcx;     // B|C|X rows (3 x n_embd), row t at t * bcx_stride
  BufferSlice taps;    // f32 [n_embd][l_cache]
  BufferSlice states;  // every slot's states (kv::StateLayout)
  BufferSlice out;     // row t at t * out_stride
  uint32_t n_embd = 0, l_cache = 0;
  uint32_t bcx_stride = 0, out_stride = 0;  // 0: 3 x n_embd, n_embd
  uint32_t slot_floats = 0, layer_offset = 0;
  // Non-empty: out also written there as q8 blocks (n_embd a multiple of 32; the tokens' rows
  // dense in the q8 layout whatever out_stride is).
  BufferSlice q8;
  // The step's longest sequence (kv::BatchMeta::max_q_len; 0: n_tokens): its tokens are split
  // into blocks of 16 walked in parallel, the state then rewritten by a second pass.
  uint32_t max_q_len = 0;
};
void short_conv(CommandRecorder& rec, PipelineCache& pipelines, const BatchInfo& batch,
                const ShortConvArgs& a);

// ---- Greedy sampling: out[r] (uint32) = argmax over the n logits of row r (lowest index on ties).
// Rows longer than kArgmaxChunk are reduced in two passes when `scratch` (argmax_scratch_bytes())
// is given (all workgroups read a chunk, then one per row combines; records a barrier), else in
// one workgroup per row (5x slower on a 128k vocabulary on an H200).
inline constexpr uint32_t kArgmaxChunk = 4096;
uint64_t argmax_scratch_bytes(uint32_t n, uint32_t n_rows);
void argmax(CommandRecorder& rec, PipelineCache& pipelines, BufferSlice logits, BufferSlice out,
            uint32_t n, uint32_t n_rows = 1, uint32_t stride = 0, BufferSlice scratch = {});

}  // namespace vkllm::vk::ops
