// GL_NV_cooperative_matrix2's tensor-addressed loads and stores, declared through
// GL_EXT_spirv_intrinsics because the build's glslang (11.13) predates that extension. The
// workgroup-scope matrices come from GL_NV_cooperative_matrix (fcoopmatNV with gl_ScopeWorkgroup);
// the build rewrites those to SPV_KHR_cooperative_matrix afterwards (coopmat_khr_rewrite.py, which
// also turns the literal type parameters below into the constant ids SPIR-V wants).
//
// A tensor layout is a 2-D tensor in memory (dims outer, inner; a row stride); a slice of it
// names the block a matrix is loaded from or stored to. With TensorLayoutClamped, elements
// outside the dims load as zero and are not stored.

#extension GL_EXT_spirv_intrinsics : require

#define TENSOR_ADDRESSING extensions = ["SPV_NV_tensor_addressing"], capabilities = [5439]
#define COOPMAT2_TENSORS extensions = ["SPV_NV_cooperative_matrix2"], capabilities = [5433]
// OpTypeTensorLayoutNV: two dims; clamp mode Undefined (0) or Constant (1)
#define TensorLayout spirv_type(TENSOR_ADDRESSING, id = 5370, 2u, 0u)
#define TensorLayoutClamped spirv_type(TENSOR_ADDRESSING, id = 5370, 2u, 1u)
// OpTypeTensorViewNV: two dims, no own dimensions, permutation (1, 0): a transposed view
#define TensorViewTransposed spirv_type(TENSOR_ADDRESSING, id = 5371, 2u, false, 1u, 0u)

spirv_instruction(TENSOR_ADDRESSING, id = 5372) TensorLayout tensor_layout();
spirv_instruction(TENSOR_ADDRESSING, id = 5372) TensorLayoutClamped clamped_layout();
spirv_instruction(TENSOR_ADDRESSING, id = 5373)
TensorLayout tensor_layout_dims(TensorLayout l, uint outer, uint inner);
spirv_instruction(TENSOR_ADDRESSING, id = 5373)
TensorLayoutClamped clamped_layout_dims(TensorLayoutClamped l, uint outer, uint inner);
spirv_instruction(TENSOR_ADDRESSING, id = 5374)
TensorLayout tensor_layout_stride(TensorLayout l, uint outer, uint inner);
spirv_instruction(TENSOR_ADDRESSING, id = 5374)
TensorLayoutClamped clamped_layout_stride(TensorLayoutClamped l, uint outer, uint inner);
spirv_instruction(TENSOR_ADDRESSING, id = 5375)
TensorLayout tensor_slice(TensorLayout l, uint outer_at, uint outer_n, uint inner_at, uint inner_n);
spirv_instruction(TENSOR_ADDRESSING, id = 5375)
TensorLayoutClamped clamped_slice(TensorLayoutClamped l, uint outer_at, uint outer_n, uint inner_at,
                                  uint inner_n);
spirv_instruction(TENSOR_ADDRESSING, id = 5377) TensorViewTransposed tensor_view_transposed();
