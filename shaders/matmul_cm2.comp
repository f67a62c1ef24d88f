#version 450
// Prefill GEMM on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2): y = W x for
// f16 weights W [rows x cols] and f16 activations x [batch rows of x_stride halves], y f32
// [batch rows of y_stride floats from element y_off], optionally accumulated (y += W x).
// Workgroup-scope matrices run only on devices that offer them for this tile size and workgroup
// (MatmulKernels checks DeviceCapabilities::coopmat2_gemm); lavapipe never runs this kernel.
//
// Each workgroup owns a BM-row x BN-token output tile and walks K in BK slices. The whole
// workgroup loads each slice straight from global memory with tensor-addressed loads and
// multiplies it as one matrix: the driver lays the tiles out in shared memory and across
// subgroups itself, which it does far better than our own staging (matmul_coopmat.comp): on an
// H100 a 14336 x 4096 product at 512 tokens took 283 us here against 530 us there.
// Weights of other types reach this kernel as f16 rows decoded by dequant_f16.comp.
//
// MOE (the grouped expert products of a mixture-of-experts FFN at prefill sizes): w holds the
// decoded rows of consecutive experts (`rows` each, from expert moe_e0), x and y are in expert
// order (moe_sorted_rows.comp gathers and scatters them), and binding 3 is moe_group.comp's groups
// buffer. Grid z is the expert (no split K): its tile multiplies the expert's rows by its pairs'
// x rows, which start at the expert's offset in the list; a token tile past its pairs exits. The
// tile loads whole slices past the expert's rows and pairs (the host pads both scratch buffers)
// but stores only its own.

#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_control_flow_attributes : require

#include "tensor_addressing.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;  // weight rows per tile
layout(constant_id = 2) const uint BN = 256;  // tokens per tile
layout(constant_id = 3) const uint BK = 64;   // K per slice; divides 256

layout(std430, binding = 0) readonly buffer W { float16_t w[]; };
layout(std430, binding = 1) readonly buffer X { float16_t x[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
#ifdef MOE
layout(std430, binding = 3) readonly buffer Groups { uint moe_groups[]; };
const uint MOE_MAX_EXPERTS = 512u;  // kMoeMaxExperts: where moe_group.comp's offsets start
#endif

layout(push_constant) uniform Params {
  uint rows;      // output features
  uint cols;      // K, a multiple of 8
  uint batch;     // tokens
  uint x_stride;  // halves between token rows of x, a multiple of 8
  uint y_stride;  // floats between token rows of y, a multiple of 4
  uint y_off;     // floats before token 0's first output, a multiple of 4
  uint flags;     // 1: accumulate
  uint w_rows;    // rows of w that may be read (>= rows: padding past them is never stored)
  uint x_rows;    // token rows of x that may be read (>= batch)
  // Split K: workgroup z multiplies K from z * k_split (a multiple of 256) to k_split further and
  // stores its partial tile part_stride floats after split z - 1's (for
  // matmul_splitk_reduce.comp to sum); 0: the whole K, into y.
  uint k_split;
  uint part_stride;
#ifdef MOE
  uint moe_e0;  // the expert of grid z 0 (w's first rows)
#endif
} p;

#define MatA fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK>
#define MatB fcoopmatNV<16, gl_ScopeWorkgroup, BK, BN>
#define Acc fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>

spirv_instruction(COOPMAT2_TENSORS, id = 5367)
MatA load_a(spirv_by_reference float16_t base, MatA fill, TensorLayout l, spirv_literal uint memory,
            spirv_literal uint addressing);
spirv_instruction(COOPMAT2_TENSORS, id = 5367)
MatA load_a(spirv_by_reference float16_t base, MatA fill, TensorLayoutClamped l,
            spirv_literal uint memory, spirv_literal uint addressing);
// addressing 1: through the tensor view that follows
spirv_instruction(COOPMAT2_TENSORS, id = 5367)
MatB load_b(spirv_by_reference float16_t base, MatB fill, TensorLayout l, spirv_literal uint memory,
            spirv_literal uint addressing, TensorViewTransposed view);
spirv_instruction(COOPMAT2_TENSORS, id = 5367)
MatB load_b(spirv_by_reference float16_t base, MatB fill, TensorLayoutClamped l,
            spirv_literal uint memory, spirv_literal uint addressing, TensorViewTransposed view);
spirv_instruction(COOPMAT2_TENSORS, id = 5367)
Acc load_acc(spirv_by_reference float base, Acc fill, TensorLayoutClamped l,
             spirv_literal uint memory, spirv_literal uint addressing, TensorViewTransposed view);
spirv_instruction(COOPMAT2_TENSORS, id = 5368)
void store_acc(spirv_by_reference float base, Acc value, TensorLayoutClamped l,
               spirv_literal uint memory, spirv_literal uint addressing, TensorViewTransposed view);

void main() {
  const uint row0 = gl_WorkGroupID.x * BM;
#ifdef MOE
  // The expert's pairs are rows tok_base .. tok_end of x and y; its weights rows w_base ...
  const uint e = p.moe_e0 + gl_WorkGroupID.z;
  const uint n_pairs = moe_groups[e];
  const uint tok0 = moe_groups[MOE_MAX_EXPERTS + e] + gl_WorkGroupID.y * BN;
  const uint tok_end = moe_groups[MOE_MAX_EXPERTS + e] + n_pairs;
  if (gl_WorkGroupID.y * BN >= n_pairs) return;  // uniform: the whole workgroup leaves
  const uint w_base = gl_WorkGroupID.z * p.rows;
  const uint split = 0u;
#else
  const uint tok0 = gl_WorkGroupID.y * BN;
  const uint tok_end = p.batch;
  const uint w_base = 0u;
  const uint split = gl_WorkGroupID.z;
#endif
  // Masked so that the compiler knows every slice starts 256-aligned: without that it cannot
  // assume aligned rows for the tensor loads, and the interior loop ran several times slower.
  const uint k_begin = (split * p.k_split) & ~255u;
  const uint k_end = p.k_split == 0 ? p.cols : min(p.cols, k_begin + p.k_split);
  const uint y_off = (p.y_off + split * p.part_stride) & ~3u;
  const TensorViewTransposed transposed = tensor_view_transposed();
  // y is [token][row], the transpose of the BM x BN tile; nothing past the batch or the rows is
  // loaded or stored.
  const TensorLayoutClamped ly = clamped_slice(
      clamped_layout_stride(clamped_layout_dims(clamped_layout(), tok_end, p.rows),
                            p.y_stride & ~3u, 1),
      tok0, BN, row0, BM);
  Acc acc = Acc(0.0);
  if ((p.flags & 1u) != 0) acc = load_acc(y[y_off], acc, ly, 0, 1, transposed);
  MatA a = MatA(0.0);
  MatB b = MatB(0.0);
  if (w_base + row0 + BM <= p.w_rows && tok0 + BN <= p.x_rows && p.cols % BK == 0) {
    // Interior tile (the host pads x and decoded weights so that nearly all are): no bounds to
    // check, and the masks tell the compiler the rows are 16-byte aligned.
    const uint K = p.cols & ~7u;
    const TensorLayout la =
        tensor_layout_stride(tensor_layout_dims(tensor_layout(), p.w_rows, K), K, 1);
    const TensorLayout lb = tensor_layout_stride(tensor_layout_dims(tensor_layout(), p.x_rows, K),
                                                 p.x_stride & ~7u, 1);
    const uint end = min(K, k_end);
    uint k = k_begin;
    for (; k + 256 <= end; k += 256) {
      [[unroll]] for (uint j = 0; j < 256; j += BK) {
        a = load_a(w[0], a, tensor_slice(la, w_base + row0, BM, k + j, BK), 0, 0);
        b = load_b(x[0], b, tensor_slice(lb, tok0, BN, k + j, BK), 0, 1, transposed);
        acc = coopMatMulAddNV(a, b, acc);
      }
    }
    for (; k < end; k += BK) {
      a = load_a(w[0], a, tensor_slice(la, w_base + row0, BM, k, BK), 0, 0);
      b = load_b(x[0], b, tensor_slice(lb, tok0, BN, k, BK), 0, 1, transposed);
      acc = coopMatMulAddNV(a, b, acc);
    }
  } else {
    // Edge tile: what lies past the rows, tokens or K loads as zero.
    const TensorLayoutClamped la = clamped_layout_stride(
        clamped_layout_dims(clamped_layout(), w_base + p.rows, p.cols), p.cols, 1);
    const TensorLayoutClamped lb = clamped_layout_stride(
        clamped_layout_dims(clamped_layout(), tok_end, p.cols), p.x_stride, 1);
    for (uint k = k_begin; k < k_end; k += BK) {
      a = load_a(w[0], a, clamped_slice(la, w_base + row0, BM, k, BK), 0, 0);
      b = load_b(x[0], b, clamped_slice(lb, tok0, BN, k, BK), 0, 1, transposed);
      acc = coopMatMulAddNV(a, b, acc);
    }
  }
  store_acc(y[y_off], acc, ly, 0, 1, transposed);
}
