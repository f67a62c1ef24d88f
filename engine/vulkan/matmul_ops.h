// Weight x activation products on the GPU for every GGUF weight type the forward pass meets:
// y = W x with W a ggml tensor [cols = K contiguous, rows = N] in its own block format (decoded
// inside the kernels; no dequantized copy of the weights exists), x and y f32.
//
//   record_matvec  decode: 1..8 activation vectors per pass over the weights (more are split
//                  into passes of 8), shaders/matvec.comp
//   record_matmul  prefill: tiled GEMM over any number of tokens; from kCoopMat2MinTokens (f16:
//                  kCoopMat2MinTokensF16) on
//                  devices with VK_NV_cooperative_matrix2, on workgroup-scope tensor-core
//                  matrices (shaders/matmul_cm2.comp; weights of other types than f16 decoded
//                  to f16 rows first, a chunk at a time, by shaders/dequant_f16.comp); else on
//                  tensor cores
//                  (shaders/matmul_coopmat.comp, GL_NV_cooperative_matrix) where the device
//                  offers a 16x16x16 f16 shape, else the portable shared-memory kernel
//                  (shaders/matmul.comp, what lavapipe runs). When the output has too few tiles
//                  to fill the GPU (batched decode), the tensor-core GEMM splits K over more
//                  workgroups and sums their partials in a second dispatch
//                  (shaders/matmul_splitk_reduce.comp) after a barrier it records itself
//   record         picks one of the two by the batch size
//   record_moe_matmul  mixture-of-experts prefill: the same tiled GEMMs (tensor-core or portable)
//                  over the (token, rank) pairs of each expert, gathered and scattered by the
//                  list ops::moe_group made (moe_matmul.cpp)
//   record_quantize_q8  x to int8 blocks for the int8-dot ("MMVQ") matvec kernels, which
//                  record_matvec uses when MatmulArgs::xq holds them and the device and type allow
//
// Kernel variants are "matvec_<type>" / "matvec_<type>_shmem" / "matmul_<type>" /
// "matmul_coopmat_<type>" (every type but f32 and bf16, whose values f16 may not hold) with <type>
// the lower-case ggml name (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, q2_k, q3_k, q4_k,
// q5_k, q6_k, iq4_xs, mxfp4), and "matvec_<type>_q8" (int8 dot products) for q4_0, q8_0, q4_k, q5_k
// and q6_k.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/tensor_type.h"
#include "engine/vulkan/buffer.h"
#include "engine/vulkan/kernel_tuning.h"
#include "engine/vulkan/ops.h"

namespace vkllm::vk {

class CommandRecorder;
class PipelineCache;
class Pipeline;

// True if matvec/matmul kernels exist for weights of `type`.
bool has_matmul_kernels(gguf::TensorType type);

// Bytes of a [rows x cols] weight tensor of `type` in the file layout (cols a multiple of the
// block size); on the device it takes weight_layout.h's device_weight_bytes of that.
uint64_t weight_tensor_bytes(gguf::TensorType type, uint32_t rows, uint32_t cols);

// Blocks of several formats (Q4_0, Q5_0, Q3_K, IQ4_NL; MXFP4 byte aligned) are not word aligned and
// the kernels read them with 32-bit loads, touching up to this many bytes past the tensor's end.
// The weights slice passed to the kernels must include them (allocate tensors with this slack).
inline constexpr uint64_t kWeightReadSlackBytes = 16;

// Bytes of `batch` vectors of `cols` activations quantized by record_quantize_q8: the int8
// values, then one (dx, sx) f32 pair per block of 32 (layout in shaders/quantize_q8.comp).
inline uint64_t q8_activation_bytes(uint32_t cols, uint32_t batch) {
  return uint64_t{batch} * cols + uint64_t{batch} * (cols / 32) * 8;
}

struct MatmulArgs {
  gguf::TensorType type = gguf::TensorType::F32;
  // rows x cols weights in the device layout (weight_layout.h), at least device_weight_bytes of
  // weight_tensor_bytes + kWeightReadSlackBytes
  BufferSlice weights;
  BufferSlice x;            // `batch` vectors of cols floats, x_stride floats apart
  BufferSlice y;            // `batch` vectors of rows floats, y_stride floats apart
  uint32_t rows = 0;        // N: output features
  uint32_t cols = 0;        // K: input features, a multiple of the type's block size (and of 4)
  uint32_t batch = 1;       // activation vectors (decode sequences or prefill tokens)
  uint32_t x_stride = 0;    // 0: cols; must be a multiple of 4
  uint32_t y_stride = 0;    // 0: rows
  uint32_t y_offset = 0;    // floats before vector 0's first row in y (rows of a split weight)
  bool accumulate = false;  // y += W x (fused residual add) instead of y = W x
  // Optional: x quantized by record_quantize_q8 (same cols and batch). record_matvec then takes
  // the int8-dot kernel when int8_dot(type) holds; x is still validated and used otherwise.
  BufferSlice xq{};
  // Optional: x as f16 rows of cols halves (cols a multiple of 8), the values record_to_f16 makes
  // (written by the norm or activation before the product). The tensor-core GEMMs then read
  // them instead of converting x themselves (reads_f16_rows); x is still validated. The
  // workgroup-scope GEMM also reads (never stores from) rows past the batch up to its token tile
  // where the slice holds them.
  BufferSlice x_f16{};
  // Optional (record_matvec and record_matvec_rope_kv of float weights: can_read_normalized):
  // the product reads x through its RMSNorm, x * norm_weight / sqrt(mean(x^2) + norm_eps), with
  // norm_weight `cols` floats, so the norm needs no dispatch of its own.
  BufferSlice norm_weight{};
  float norm_eps = 0.f;
};

// Where a split-K product recorded with record_matmul's `deferred` left its partial outputs for
// the kernel after it to sum: output row r of token t is the sum over s < splits of
// parts[s * stride + t * ld + r] (floats, in that order of s; the product's accumulate is not
// applied). splits 0: the product wrote y itself (accumulate applied), nothing is deferred.
struct SplitParts {
  BufferSlice parts;
  uint32_t splits = 0, ld = 0, stride = 0;
};

// Fewest tokens the workgroup-scope GEMM takes by default. Weights it must first decode to f16
// rows pay that pass per product, which batched decode steps (<= 64 tokens) do not earn back
// (8B Q4_K_M at 64 sequences: 3374-3412 tok/s against 4143-4226 on the subgroup-scope GEMM,
// H100); f16 weights need no pass (1B F16 at 32 sequences: 11664-11865 against 10358-10583; at
// 12 / 16 sequences 4000-4713 / 5749-6253 against 3946-4326 / 5533-5686), so they take it from
// two tokens: whatever the backend does not keep on the matvec (runtime/runner.h: long F16 rows
// leave it after 5 tokens, the others after one pass of 8 vectors).
inline constexpr uint32_t kCoopMat2MinTokens = 128;
inline constexpr uint32_t kCoopMat2MinTokensF16 = 2;

// The RMSNorm that record_reduce_norm applies to the rows it sums: y_norm = y / rms(y) * weight
// for each of the product's output vectors, and optionally y_norm as dense f16 rows.
struct ReduceNormEpilogue {
  BufferSlice weight;     // rows floats
  BufferSlice y;          // batch vectors of rows floats, y_stride apart
  uint32_t y_stride = 0;  // 0: rows; even
  BufferSlice f16;        // optional: batch rows of `rows` halves
  BufferSlice counters;   // batch 32-bit words, zero between uses (the kernel leaves them so)
  float eps = 1e-6f;
};

// What record_matvec_rope_kv does with the rows of its product (one vector per batch token), rows
// row_base.. row_base + MatmulArgs::rows of Q|K|V (q_rows + 2 * kv_rows: the stacked product, or
// Q, K or V alone): Q heads rotated into y (at the product's own row index), K heads rotated into
// the K cache and V heads copied into the V cache, as ops::rope and ops::write_kv would.
struct RopeKvEpilogue {
  ops::RopeParams rope;  // "normal" pair order only (neox = false)
  ops::BatchInfo batch;  // batch.n_tokens = MatmulArgs::batch
  ops::CacheRegion k_cache, v_cache;
  uint32_t q_rows = 0, kv_rows = 0;  // multiples of rope.head_dim
  uint32_t row_base = 0;             // a multiple of rope.head_dim
};

// A grouped expert product (record_moe_matmul): for every (token, rank) pair q = t * n_used + k
// that ops::moe_group listed under expert e,
//   y[q * y_stride + row] = W[e][row] . x[(x_per_pair ? q : t) * x_stride]
// with W a stacked [cols, rows, n_expert] tensor (each expert's rows of `type` weights after the
// last one's, in the device layout) and `groups` moe_group's output for n_tokens * n_used pairs.
struct MoeMatmulArgs {
  gguf::TensorType type = gguf::TensorType::F32;
  BufferSlice weights, x, y, groups;
  uint32_t rows = 0, cols = 0, n_expert = 0, n_used = 0, n_tokens = 0;
  uint32_t x_stride = 0, y_stride = 0;  // 0: cols / rows
  bool x_per_pair = false;
  // The decode kernel over the groups (matvec.comp's MOE_GROUPS: each expert's rows read once
  // per 8 of its pairs) instead of the tiled GEMM: for steps whose experts get a few pairs each.
  bool matvec = false;
};

// The indirect products over the experts a router selected (record_moe_matvec; decode sizes),
// with W a stacked [cols, rows, n_expert] tensor as in MoeMatmulArgs and ids / weights as
// ops::moe_route writes them:
//   combine false: y[q][row] = W[ids[q]][row] . x[x_per_pair ? q : q / n_used]  (q < n_items pairs)
//   combine true:  y[t][row] += sum_k weights[t * n_used + k] * W[ids[..]][row] . x[t * n_used + k]
//                  (t < n_items tokens)
struct MoeMatvecArgs {
  gguf::TensorType type = gguf::TensorType::F32;
  BufferSlice w, x, y, ids, weights;
  uint32_t cols = 0, rows = 0, n_expert = 0, n_used = 0, n_items = 0;
  uint32_t x_stride = 0, y_stride = 0;  // 0: cols / rows
  bool x_per_pair = false, combine = false;
  // Optional: x's rows (a token's, or a pair's with x_per_pair) quantized by record_quantize_q8,
  // packed. record_moe_matvec then takes the int8-dot kernel when int8_dot(type) holds; x is
  // still validated and used otherwise.
  BufferSlice xq{};
};

class MatmulKernels {
 public:
  // Largest batch handled by one matvec pass; record() switches to the GEMM above it.
  static constexpr uint32_t kMaxMatvecColumns = 8;

  explicit MatmulKernels(PipelineCache& pipelines, const MatmulTuning& tuning = {});

  // Record the product into `rec` (no barrier is added before or after; a split-K product, and a
  // tensor-core one that converts its activations to f16 first, record one between their
  // dispatches, and take their scratch in turn from rings of slots (RingScratch below) so that
  // products recorded right after cannot overwrite scratch still being read).
  // Throw
  // std::invalid_argument naming the offending argument for unsupported types, shapes that break
  // the block/alignment rules, or slices too small for the shape.
  void record_matvec(CommandRecorder& rec, const MatmulArgs& args);
  // With `deferred`, a product that splits K records no reduction pass: its partials stay in
  // scratch (valid until the product after next), described in *deferred, for the consumer
  // recorded after the next barrier to sum.
  void record_matmul(CommandRecorder& rec, const MatmulArgs& args, SplitParts* deferred = nullptr);
  void record(CommandRecorder& rec, const MatmulArgs& args) {
    if (args.batch <= kMaxMatvecColumns)
      record_matvec(rec, args);
    else
      record_matmul(rec, args);
  }

  // The decode Q|K|V product (int8 dot when given xq and the type has it, else the float-
  // activation kernel) with RoPE and the KV-cache write in the same dispatch: one workgroup per
  // pair of rows. Needs can_fuse_rope_kv; `args` as record_matvec's (no accumulate). Throws
  // std::invalid_argument where it cannot run.
  void record_matvec_rope_kv(CommandRecorder& rec, const MatmulArgs& args,
                             const RopeKvEpilogue& rope_kv);
  // True if record_matvec_rope_kv runs this product: "normal" RoPE order, and the int8 dot for
  // `type` or the subgroup reduction (the kernels' pair epilogue needs it).
  bool can_fuse_rope_kv(gguf::TensorType type, const ops::RopeParams& rope) const;
  // Whether record_matvec reads x of `type` weights, `batch` vectors, through its RMSNorm
  // (MatmulArgs::norm_weight): float weights on the float-activation kernel with the subgroup
  // reduction, at most kMaxMatvecColumns vectors.
  bool can_read_normalized(gguf::TensorType type, uint32_t batch) const;

  // The partials a product left in `parts` (record_matmul's `deferred`, splits > 0) summed into
  // args.y as the reduction pass would (added to it with args.accumulate), then each of y's
  // vectors RMS-normalized: one dispatch, the last workgroup of each vector normalizing it.
  // `args`: the product's (y, y_offset, y_stride, rows, batch, accumulate). Needs
  // can_reduce_norm; throws std::invalid_argument where it cannot run.
  void record_reduce_norm(CommandRecorder& rec, const MatmulArgs& args, const SplitParts& parts,
                          const ReduceNormEpilogue& norm);
  // True if record_reduce_norm runs for `rows` outputs: even rows, subgroup arithmetic.
  bool can_reduce_norm(uint32_t rows) const;

  // The grouped expert product (MoeMatmulArgs): the subgroup-scope tensor-core GEMM where
  // coopmat(type) holds, else the portable one, each tile over one expert's pairs (its weight
  // tile read once per tile of pairs); a grid for the worst case (every token on one expert)
  // whose workgroups beyond their expert's pairs exit at once. No barrier added, except, as in
  // record_matmul, between the tensor-core GEMM and the conversion of its activations to f16
  // rows before it (scratch from the same ring); throws std::invalid_argument as record_matmul
  // does.
  // With args.matvec, the decode kernel over the groups instead (no f16 conversion). Where
  // experts get many pairs (moe_cm2) on devices with workgroup-scope matrices, the workgroup-scope
  // GEMM over rows gathered into expert order (record_moe_matmul_cm2), which records barriers
  // between its own steps.
  void record_moe_matmul(CommandRecorder& rec, const MoeMatmulArgs& args);
  // The indirect expert product (MoeMatvecArgs) on the decode matvec (matvec.comp's MOE_IDS
  // variants: several rows a workgroup, the sums reduced as record_matvec's are); no barrier
  // added; throws std::invalid_argument for unsupported types or shapes.
  void record_moe_matvec(CommandRecorder& rec, const MoeMatvecArgs& args);

  // True if record_matmul runs weights of `type` on tensor cores.
  bool coopmat(gguf::TensorType type) const;
  // True if record_matmul runs this product on the workgroup-scope GEMM.
  bool coopmat2(const MatmulArgs& args) const;
  // True if record_matmul runs `batch` tokens of `type` weights on the workgroup-scope GEMM where
  // the shape allows it (coopmat2's alignment rules).
  bool coopmat2(gguf::TensorType type, uint32_t batch) const;
  // True if record_matmul of `batch` tokens of `type` weights takes a tensor-core GEMM on f16
  // activation rows, so that MatmulArgs::x_f16 saves it a conversion.
  bool reads_f16_rows(gguf::TensorType type, uint32_t batch) const;
  // True if record_matvec runs weights of `type` with int8 dot products when given q8 activations.
  bool int8_dot(gguf::TensorType type) const;
  // x (batch vectors of cols floats, x_stride apart; cols a multiple of 32) to q8 blocks in xq
  // (at least q8_activation_bytes(cols, batch)). No barrier is added before or after.
  void record_quantize_q8(CommandRecorder& rec, BufferSlice x, uint32_t cols, uint32_t batch,
                          uint32_t x_stride, BufferSlice xq);

  const MatmulTuning& tuning() const { return tuning_; }

 private:
  // The float-activation kernel for validated `args` (`type_name` names the shader variants'
  // type; float_weights: F32/F16/BF16), with the RoPE/KV epilogue if given.
  void record_matvec_float(CommandRecorder& rec, const MatmulArgs& args,
                           const std::string& type_name, bool float_weights,
                           const RopeKvEpilogue* rope_kv);
  // record_moe_matmul on the workgroup-scope GEMM (matmul_cm2.cpp) for validated `args`: x
  // gathered into expert order as f16 rows, each chunk of experts decoded to f16 and multiplied
  // a workgroup per (rows, pairs, expert), the rows scattered back to pair order.
  void record_moe_matmul_cm2(CommandRecorder& rec, const MoeMatmulArgs& args,
                             const std::string& type_name, uint64_t x_stride, uint64_t y_stride);
  // Whether record_moe_matmul takes record_moe_matmul_cm2 for `args`.
  bool moe_cm2(const MoeMatmulArgs& args) const;
  // record_moe_matmul's decode-kernel variant (MoeMatmulArgs::matvec) for validated `args`.
  void record_moe_grouped_matvec(CommandRecorder& rec, const MoeMatmulArgs& args,
                                 const std::string& type_name, uint32_t unit, uint64_t x_stride,
                                 uint64_t y_stride, uint64_t expert_bytes);
  // The int8-dot kernel for validated `args`, with the RoPE/KV epilogue if given.
  void record_matvec_q8(CommandRecorder& rec, const MatmulArgs& args, const std::string& type_name,
                        const RopeKvEpilogue* rope_kv = nullptr);

  PipelineCache& pipelines_;
  MatmulTuning tuning_;
  bool int8_dot_enabled_ = false;
  bool coopmat_enabled_ = false;
  // Split-K targets in workgroups per compute unit: up to 64 tokens (batched decode), and above.
  uint32_t split_per_cu_ = 0, split_per_cu_prefill_ = 0, split_min_slices_ = 8;
  // Scratch that a product writes and a kernel reads after a barrier: `slots` equal parts of the
  // last buffer taken in turn, so that products recorded one after another with no barrier
  // between them (up to `slots` - 1 besides the one read) cannot overwrite what an earlier one
  // left to be read. Earlier, smaller buffers stay alive because command buffers recorded with
  // them may still be pending.
  class RingScratch {
   public:
    RingScratch(const char* name, uint32_t slots) : name_(name), slots_(slots) {}
    BufferSlice next(Device& device, uint64_t bytes);

   private:
    const char* name_;
    uint32_t slots_;
    std::vector<Buffer> buffers_;
    uint64_t slot_bytes_ = 0;
    uint32_t turn_ = 0;
  };
  // Split-K partials: Q, K and V kept apart leave three products' partials for RoPE and the cache
  // writes at once (VulkanBackend::products_then_rope_kv), and the next product may be recorded
  // before they are read.
  RingScratch split_parts_{"split-K partials", 4};
  RingScratch x_f16_{"f16 activations", 2};
  bool x_f16_enabled_ = false;
  bool decode_f16_ = true;
  // F16 matvecs on rows of a multiple of 8 read 16 bytes a load (matvec_f16w).
  bool f16_wide_ = true;

  bool coopmat2_enabled_ = false;
  uint32_t cm2_min_tokens_ = 0;  // 0: the per-type defaults
  RingScratch w_f16_{"f16 weights", 2};
  RingScratch moe_rows_{"MoE rows in expert order", 2};
  // The workgroup-scope GEMM (matmul_cm2.cpp) for a product coopmat2() accepts.
  void record_matmul_cm2(CommandRecorder& rec, const MatmulArgs& args);
  // Bytes of f16 weights the workgroup-scope GEMMs decode per chunk (the tuning's, else by the
  // device's memory).
  uint64_t cm2_chunk_bytes() const;
  // Rows row0 .. row0 + n_rows of `weights` ([rows x cols] of `type_name`'s blocks) decoded to
  // f16 rows in `out` (dequant_f16.comp); no barrier added.
  void record_decode_f16(CommandRecorder& rec, const std::string& type_name, BufferSlice weights,
                         BufferSlice out, uint32_t n_rows, uint32_t cols, uint32_t row0);
  // Fewest tokens of `type` weights the workgroup-scope GEMM takes.
  uint32_t cm2_min_tokens(gguf::TensorType type) const;
  // The workgroup-scope GEMM's pipeline for tiles of `tokens` tokens.
  const Pipeline& cm2_gemm(uint32_t tokens);
  // K splits for a workgroup-scope GEMM of `tiles` output tiles.
  uint32_t cm2_splits(uint32_t tiles, uint32_t cols, uint32_t batch) const;
  // y (+)= the sum of `splits` partial outputs in `parts` (shaders/matmul_splitk_reduce.comp);
  // flags bit 0: accumulate. No barrier added.
  void record_splitk_reduce(CommandRecorder& rec, BufferSlice parts, BufferSlice y, uint32_t rows,
                            uint32_t batch, uint32_t y_stride, uint32_t y_off, uint32_t flags,
                            uint32_t splits, uint32_t part_ld, uint32_t part_stride);

  uint32_t coopmat_splits(uint32_t tiles, uint32_t cols, uint32_t batch, uint32_t slice_k) const;
  // args.x as f16 rows of `stride` halves into `out` (shaders/to_f16.comp); no barrier added.
  void record_to_f16(CommandRecorder& rec, const MatmulArgs& args, uint32_t stride,
                     BufferSlice out);
};

}  // namespace vkllm::vk
