// dot4(a, b, acc): the dot product of 4 packed signed bytes of a and b, added to acc: SPIR-V's
// OpSDotAccSatKHR declared through GL_EXT_spirv_intrinsics (the build's glslang has no
// GL_EXT_integer_dot_product). Needs the device's shaderIntegerDotProduct feature, so only
// variants the host picks on such devices include it.
#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4453)
int sdot4_acc(uint a, uint b, int acc, spirv_literal int packed_format);

// Packed format 0: PackedVectorFormat4x8Bit.
int dot4(uint a, uint b, int acc) { return sdot4_acc(a, b, acc, 0); }
