// The Q, K and V projections of one layer, shared by the decoder and encoder forward passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

struct QkvRows {
  Rows q, k, v;
};

// The products that make Q, K and V: three, or one into QKV where the model's Q|K|V were stacked
// at load (then q, k and v are column ranges of its rows).
struct QkvProducts {
  ProductOut outs[3];
  size_t n_outs = 0;
  QkvRows rows;
  std::span<const ProductOut> span() const { return {outs, n_outs}; }
};

inline QkvProducts qkv_products(const model::ModelSpec& spec, uint32_t l) {
  const uint32_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa();
  QkvProducts p;
  if (spec.fused_qkv) {
    p.outs[0] = {{model::Weight::AttnQKV, l}, {Act::QKV}};
    p.n_outs = 1;
    const uint32_t stride = qd + 2 * kvd;
    p.rows = {{Act::QKV, 0, stride}, {Act::QKV, qd, stride}, {Act::QKV, qd + kvd, stride}};
    return p;
  }
  p.outs[0] = {{model::Weight::AttnQ, l}, {Act::Q}};
  p.outs[1] = {{model::Weight::AttnK, l}, {Act::K}};
  p.outs[2] = {{model::Weight::AttnV, l}, {Act::V}};
  p.n_outs = 3;
  p.rows = {{Act::Q, 0, qd}, {Act::K, 0, kvd}, {Act::V, 0, kvd}};
  return p;
}

// Q, K and V of T rows of `x`. No barrier after.
inline QkvRows project_qkv(StepBackend& b, const model::ModelSpec& spec, uint32_t l, Rows x,
                           uint32_t T) {
  const QkvProducts p = qkv_products(spec, l);
  b.products(x, T, p.span());
  return p.rows;
}

}  // namespace vkllm::runtime
