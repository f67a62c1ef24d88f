// Internal: the row kernels built once per ISA (row_kernels_impl.h compiled by
// row_kernels_portable.cpp, row_kernels_avx2.cpp and row_kernels_avx512.cpp with their -m flags);
// ops.cpp picks a table with row_kernels(isa).
#pragma once

#include <cstdint>

#include "engine/cpu/isa.h"
#include "engine/cpu/ops.h"

namespace vkllm::cpu::detail {

enum class ElementOp : uint32_t { Add, Mul, Scale, Softcap, Gelu };

struct RowKernels {
  void (*rms_norm)(const RmsNormArgs& a, uint32_t row_begin, uint32_t row_end);
  void (*glu)(const GluArgs& a, uint32_t row_begin, uint32_t row_end);
  // b is read by Add and Mul only; s is the scale or the cap.
  void (*elementwise)(ElementOp op, const float* a, const float* b, float* out, float s,
                      uint32_t begin, uint32_t end);
  void (*add_bias)(float* x, const float* bias, uint32_t n, uint32_t stride, uint32_t row_begin,
                   uint32_t row_end);
  // One head row: dst = rope(src) with cs = (cos, sin) of each of the n_dims/2 pairs; dims from
  // n_dims on are copied. head_dim <= kMaxHeadDim; dst may alias src.
  void (*rope_row)(const float* src, float* dst, const float* cs, uint32_t head_dim,
                   uint32_t n_dims, bool neox);
  // f32 -> f16 bits, round to nearest even.
  void (*to_f16)(const float* src, uint16_t* dst, uint32_t n);
  // Index of the largest of n values: the lowest on ties, NaN never wins, 0 if none compares.
  uint32_t (*argmax)(const float* row, uint32_t n);
};

inline constexpr uint32_t kMaxHeadDim = 512;

extern const RowKernels kRowKernelsPortable;
extern const RowKernels kRowKernelsAvx2;
extern const RowKernels kRowKernelsAvx512;

inline const RowKernels& row_kernels(Isa isa) {
  switch (usable_isa(isa)) {
    case Isa::Amx:  // no tile code here: AMX machines run the AVX-512 kernels
    case Isa::Avx512:
      return kRowKernelsAvx512;
    case Isa::Avx2:
      return kRowKernelsAvx2;
    default:
      return kRowKernelsPortable;
  }
}

}  // namespace vkllm::cpu::detail
