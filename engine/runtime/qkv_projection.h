// The Q, K and V projections of one layer, shared by the decoder and encoder forward passes.
#pragma once

#include <cstdint>

#include "engine/model/model_spec.h"
#include "engine/runtime/step_backend.h"

namespace vkllm::runtime {

struct QkvRows {
  Rows q, k, v;
};

// Q, K and V of T rows of `x`: three products, or one into QKV where the model's Q|K|V were
// stacked at load (then q, k and v are column ranges of its rows). No barrier after.
inline QkvRows project_qkv(StepBackend& b, const model::ModelSpec& spec, uint32_t l, Rows x,
                           uint32_t T) {
  const uint32_t qd = spec.n_embd_q(), kvd = spec.n_embd_k_gqa();
  if (spec.fused_qkv) {
    const ProductOut out[] = {{{model::Weight::AttnQKV, l}, {Act::QKV}}};
    b.products(x, T, out);
    const uint32_t stride = qd + 2 * kvd;
    return {{Act::QKV, 0, stride}, {Act::QKV, qd, stride}, {Act::QKV, qd + kvd, stride}};
  }
  const ProductOut out[] = {{{model::Weight::AttnQ, l}, {Act::Q}},
                            {{model::Weight::AttnK, l}, {Act::K}},
                            {{model::Weight::AttnV, l}, {Act::V}}};
  b.products(x, T, out);
  return {{Act::Q, 0, qd}, {Act::K, 0, kvd}, {Act::V, 0, kvd}};
}

}  // namespace vkllm::runtime
