// Row kernels of Gemma 3n's StepBackend operations on the CPU (step_backend.h documents each):
// plain scalar loops, one call per range [begin, end) of rows so the backend can share rows out
// over its pool. Strides are in floats between consecutive rows.
#pragma once

#include <cstdint>

namespace vkllm::runtime::cpu_gemma3n {

struct RowsPtr {
  float* p = nullptr;
  uint64_t stride = 0;
  float* row(uint32_t r) const { return p + r * stride; }
};

void rms_norm_plain(RowsPtr x, RowsPtr y, uint32_t n, float eps, uint32_t b, uint32_t e);
void add_rows(RowsPtr a, RowsPtr bb, RowsPtr out, uint32_t n, float scale, uint32_t b, uint32_t e);
void mul_rows(RowsPtr a, RowsPtr bb, RowsPtr out, uint32_t n, uint32_t b, uint32_t e);
void mul_weight(RowsPtr x, const float* w, RowsPtr out, uint32_t n, uint32_t b, uint32_t e);
void scale_rows(RowsPtr x, uint32_t n, float s, uint32_t b, uint32_t e);
void gaussian_topk(RowsPtr x, uint32_t n, float std_mul, uint32_t b, uint32_t e);
void match_magnitude(RowsPtr ref, RowsPtr x, RowsPtr out, uint32_t n, uint32_t b, uint32_t e);
void altup_predict(RowsPtr s, RowsPtr coefs, RowsPtr out, uint32_t n, uint32_t k, uint32_t b,
                   uint32_t e);
void altup_correct(RowsPtr pred, RowsPtr active, RowsPtr coefs, RowsPtr out, uint32_t n, uint32_t k,
                   uint32_t i_active, uint32_t b, uint32_t e);
void mean_streams(RowsPtr s, RowsPtr out, uint32_t n, uint32_t k, uint32_t b, uint32_t e);

}  // namespace vkllm::runtime::cpu_gemma3n
