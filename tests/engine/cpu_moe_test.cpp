// The CPU backend's MoE FFN (engine/runtime/cpu_moe.h) with MXFP4 experts, as gpt-oss ships them,
// against a scalar reference in double on the dequantized experts: routing, gate/up, SwiGLU, down
// and the weighted sum into the residual, on the portable path (float dots of dequantized rows)
// and the AVX2 path (the MXFP4 x Q8 kernel) where the CPU has it.
//
// Tolerances: the portable path only rounds in float accumulation (1e-4 of the token's largest
// FFN output). The integer path rounds the activations of both products to 8 bits per block of
// 32; its reference rounds them the same way, so what is left is float accumulation and the odd
// activation one step apart where the reference's double GLU and the kernel's float one straddle
// a rounding boundary: 1e-3 of the largest output, where a wrong code, nibble order or exponent
// moves outputs by tens of percent. (Unrounded, the 8-bit activations alone differ by ~2%.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "engine/cpu/isa.h"
#include "engine/gguf/quants.h"
#include "engine/runtime/cpu_moe.h"
#include "tests/engine/vk_test_context.h"
#include "tests/reference/reference_forward.h"

namespace vkllm::runtime {
namespace {

using gguf::TensorType;

// A stacked [cols, rows, n] tensor of `type` from random values, and its dequantized floats.
struct Stacked {
  std::vector<std::byte> bytes;
  std::vector<float> deq;
  HostTensor t;
};

Stacked stacked(test::SeededRng& rng, const char* name, TensorType type, uint64_t cols,
                uint64_t rows, uint64_t n) {
  Stacked s;
  const uint64_t count = cols * rows * n;
  std::vector<float> v(count);
  for (float& f : v) f = rng.normal(0.f, 0.5f);
  s.bytes.resize(gguf::row_bytes(type, cols) * rows * n);
  gguf::quantize(type, v.data(), s.bytes.data(), count);
  s.deq.resize(count);
  gguf::dequantize(type, s.bytes.data(), s.deq.data(), count);
  s.t.name = name;
  s.t.type = type;
  s.t.shape = n > 1 ? std::vector<uint64_t>{cols, rows, n} : std::vector<uint64_t>{cols, rows};
  s.t.data = s.bytes.data();
  s.t.bytes = s.bytes.size();
  return s;
}

// x rounded to 8 bits per block of 32 as the integer kernels round it: scale max|x| / 127 in
// f32, values rounded to nearest.
std::vector<float> through_q8(const float* x, uint32_t n) {
  std::vector<float> y(n);
  for (uint32_t b = 0; b < n; b += 32) {
    float amax = 0;
    for (uint32_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float inv = amax > 0 ? 127.0f / amax : 0.0f, d = amax / 127.0f;
    for (uint32_t i = b; i < b + 32; ++i) y[i] = std::nearbyint(x[i] * inv) * d;
  }
  return y;
}

double dot(const float* w, const float* x, uint32_t n) {
  double acc = 0;
  for (uint32_t i = 0; i < n; ++i) acc += double(w[i]) * x[i];
  return acc;
}

TEST(CpuMoeFfn, Mxfp4ExpertsMatchTheScalarReference) {
  test::SeededRng rng;
  constexpr uint32_t E = 96, F = 64, n_expert = 6, K = 2, T = 9;
  const Stacked router = stacked(rng, "router", TensorType::F32, E, n_expert, 1);
  const Stacked gate = stacked(rng, "gate", TensorType::MXFP4, E, F, n_expert);
  const Stacked up = stacked(rng, "up", TensorType::MXFP4, E, F, n_expert);
  const Stacked down = stacked(rng, "down", TensorType::MXFP4, F, E, n_expert);
  std::vector<float> x(size_t(T) * E), out0(size_t(T) * E);
  for (float& v : x) v = rng.normal();
  for (float& v : out0) v = rng.normal();

  // The reference: route, then each selected expert's SwiGLU FFN, weighted, into the residual;
  // with rounded activations (the integer path's reference) or without.
  auto reference = [&](bool rounded) {
    std::vector<double> want(out0.begin(), out0.end());
    for (uint32_t t = 0; t < T; ++t) {
      const float* xt = x.data() + size_t(t) * E;
      std::vector<float> logits(n_expert);
      for (uint32_t e = 0; e < n_expert; ++e)
        logits[e] = float(dot(router.deq.data() + e * E, xt, E));
      const auto route = reference::reference_moe_route(logits, K, true);
      const std::vector<float> xq = rounded ? through_q8(xt, E) : std::vector<float>(xt, xt + E);
      for (uint32_t k = 0; k < K; ++k) {
        const size_t e = route.ids[k];
        std::vector<float> act(F);
        for (uint32_t f = 0; f < F; ++f) {
          const double g = dot(gate.deq.data() + (e * F + f) * E, xq.data(), E);
          const double u = dot(up.deq.data() + (e * F + f) * E, xq.data(), E);
          act[f] = float(g / (1.0 + std::exp(-g)) * u);
        }
        if (rounded) act = through_q8(act.data(), F);
        for (uint32_t i = 0; i < E; ++i)
          want[size_t(t) * E + i] +=
              route.weights[k] * dot(down.deq.data() + (e * E + i) * F, act.data(), F);
      }
    }
    return want;
  };

  const CpuMoeWeights w{&router.t, &gate.t, &up.t, &down.t};
  MoeSpec m;
  m.n_embd = E;
  m.n_ff = F;
  m.n_expert = n_expert;
  m.n_used = K;
  cpu::ThreadPool pool(2);
  for (const cpu::Isa isa : {cpu::Isa::Portable, cpu::Isa::Avx2}) {
    if (isa > cpu::supported_isa()) continue;
    SCOPED_TRACE(isa == cpu::Isa::Portable ? "portable" : "avx2");
    const bool integer = isa != cpu::Isa::Portable;
    const double rel_tol = integer ? 1e-3 : 1e-4;
    const std::vector<double> want = reference(integer);
    std::vector<float> out = out0;
    CpuMoeScratch scratch;
    cpu::MatmulWorkspace ws;
    cpu_moe_ffn(m, T, w, x.data(), E, out.data(), E, scratch, pool, ws, isa);
    double worst = 0;
    for (uint32_t t = 0; t < T; ++t) {
      double scale = 0;
      for (uint32_t i = 0; i < E; ++i)
        scale = std::max(scale, std::fabs(want[size_t(t) * E + i] - out0[size_t(t) * E + i]));
      for (uint32_t i = 0; i < E; ++i) {
        const double err = std::fabs(out[size_t(t) * E + i] - want[size_t(t) * E + i]) / scale;
        worst = std::max(worst, err);
        ASSERT_LE(err, rel_tol) << "token " << t << " output " << i;
      }
    }
    std::printf("MXFP4 experts, %s: worst error %.2e of the token's largest FFN output\n",
                isa == cpu::Isa::Portable ? "portable" : "avx2", worst);
  }
}

}  // namespace
}  // namespace vkllm::runtime
