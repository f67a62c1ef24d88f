#include "engine/cpu/quant_matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/cpu/amx_matmul.h"
#include "engine/cpu/quant_matmul_kernels.h"
#include "engine/gguf/quants.h"

namespace vkllm::cpu {
namespace {

using detail::ActFormat;
using detail::ActQ8_0;
using detail::ActQ8K;
using detail::FastKernel;
using gguf::TensorType;

// Token rows handled together per pass over a task's weight rows: their activations (16 x 2.3 KB
// of Q8_K at 2048 columns) stay in L1/L2 while each weight row is reused across all of them.
constexpr uint32_t kTokenChunk = 16;
// Decode streams weights from DRAM: while a row is computed, ask for the bytes a fixed distance
// ahead (one row's worth, spread over the row so the requests trickle out with the arithmetic).
// The stream runs on into the next task's rows (the same thread's, or the other's, which it will
// want soon). Measured on the 1B forward's matmuls (one thread, weights on huge pages): 1.6x on
// Q4_K_M over no prefetch and 1.13x over whole-row prefetch of the row after next for short rows
// only; 1.3x on F16, 1.17x on Q8_0. Further ahead (4 KiB) loses: the lines arrive too early.
constexpr uint64_t kPrefetchDistance = 1024;
// A task's weight rows should stay in L2 across the token chunks of a prefill.
constexpr uint64_t kTaskWeightBytes = 128 * 1024;
// Tasks per thread, for balance when threads run at different speeds.
constexpr uint64_t kTasksPerThread = 8;
// With one token chunk the weights pass once, so a task is a stretch of one stream from DRAM, and
// every task start costs a ramp-up of the prefetchers: measured at 2 threads on the 1B forward,
// 128 KiB tasks reach 27.5 GB/s on the F16 head and 1 MiB tasks 34 GB/s (the machine's stream
// read is 34-36), which is 10.7 -> 12.2 tok/s F16, 27.0 -> 31 Q4_K_M, 16.1 -> 18 Q8_0 (the
// same with four or eight tasks a thread). Tasks still come kTasksPerThread to a thread, so with
// many cores (each with less bandwidth to ramp up) the matrices keep their balance.
constexpr uint64_t kStreamTaskBytes = 1024 * 1024;

// Round to nearest-even through the float adder (valid for |v| < 2^22; |v| <= 127 here): unlike
// lrint it vectorizes, and the activations are quantized once per token per call.
inline int round_small(float v) {
  float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

void quantize_q8_k(const float* x, ActQ8K* out, uint64_t cols) {
  for (uint64_t b = 0; b < cols / gguf::kSuperBlock; ++b, x += gguf::kSuperBlock) {
    ActQ8K& blk = out[b];
    float amax = 0.0f;
    for (size_t i = 0; i < gguf::kSuperBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    blk.d = amax > 0.0f ? amax / 127.0f : 0.0f;
    for (size_t i = 0; i < gguf::kSuperBlock; ++i) {
      blk.qs[i] = static_cast<int8_t>(std::clamp(round_small(x[i] * inv), -127, 127));
    }
    for (size_t g = 0; g < gguf::kSuperBlock / 16; ++g) {
      int s = 0;
      for (size_t i = 0; i < 16; ++i) s += blk.qs[16 * g + i];
      blk.bsums[g] = static_cast<int16_t>(s);
    }
  }
}

void quantize_q8_0u(const float* x, std::byte* out, uint64_t cols) {
  auto* q = reinterpret_cast<uint8_t*>(out);
  auto* scales = reinterpret_cast<float*>(out + detail::act_q8_0u_scales_offset(cols));
  for (uint64_t b = 0; b < cols / gguf::kLegacyBlock; ++b, x += gguf::kLegacyBlock) {
    float amax = 0.0f;
    for (size_t i = 0; i < gguf::kLegacyBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    scales[b] = amax > 0.0f ? amax / 127.0f : 0.0f;
    for (size_t i = 0; i < gguf::kLegacyBlock; ++i) {
      q[b * gguf::kLegacyBlock + i] =
          static_cast<uint8_t>(std::clamp(round_small(x[i] * inv), -127, 127) + 128);
    }
  }
}

void quantize_q8_0(const float* x, ActQ8_0* out, uint64_t cols) {
  for (uint64_t b = 0; b < cols / gguf::kLegacyBlock; ++b, x += gguf::kLegacyBlock) {
    ActQ8_0& blk = out[b];
    float amax = 0.0f;
    for (size_t i = 0; i < gguf::kLegacyBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    blk.d = amax > 0.0f ? amax / 127.0f : 0.0f;
    int s = 0;
    for (size_t i = 0; i < gguf::kLegacyBlock; ++i) {
      const int q = std::clamp(round_small(x[i] * inv), -127, 127);
      blk.qs[i] = static_cast<int8_t>(q);
      s += q;
    }
    blk.sum = s;
  }
}

bool has_vnni() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  return vnni;
#else
  return false;
#endif
}

FastKernel fast_kernel(Isa isa, TensorType type) {
  if (isa >= Isa::Avx512 && has_vnni()) return detail::avx512_kernel(type);
  if (isa >= Isa::Avx2) return detail::avx2_kernel(type);
  return {};
}

// What each product runs with, fixed before the loop.
struct Plan {
  FastKernel kernel;
  uint64_t row_bytes;
  uint32_t first_task;
  uint64_t rows_per_task;
};

// The portable path: one weight row dequantized to floats, dotted with each token's floats.
void generic_rows(const WeightView& w, uint64_t row_bytes, uint64_t r0, uint64_t r1, const float* x,
                  uint64_t x_stride, uint32_t n, const Product& p, detail::RowKernel f32_dot,
                  std::vector<float>& buf) {
  if (buf.size() < w.cols) buf.resize(w.cols);
  const auto* row = reinterpret_cast<const std::byte*>(buf.data());
  const auto* xb = reinterpret_cast<const std::byte*>(x);
  for (uint64_t r = r0; r < r1; ++r) {
    gguf::dequantize(w.type, w.data + r * row_bytes, buf.data(), w.cols);
    for (uint32_t t = 0; t < n; t += detail::kMaxTokensPerKernel) {
      const unsigned nt = std::min<uint32_t>(detail::kMaxTokensPerKernel, n - t);
      float out[detail::kMaxTokensPerKernel];
      if (f32_dot) {
        // The dequantized row is an F32 row: the ISA's float kernel does the dots.
        f32_dot(row, w.cols, xb + t * x_stride * sizeof(float), x_stride * sizeof(float), nt, out);
      } else {
        for (unsigned i = 0; i < nt; ++i) {
          const float* xt = x + (t + i) * x_stride;
          float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          uint64_t c = 0;
          for (; c + 4 <= w.cols; c += 4) {
            s0 += buf[c] * xt[c];
            s1 += buf[c + 1] * xt[c + 1];
            s2 += buf[c + 2] * xt[c + 2];
            s3 += buf[c + 3] * xt[c + 3];
          }
          for (; c < w.cols; ++c) s0 += buf[c] * xt[c];
          out[i] = (s0 + s1) + (s2 + s3);
        }
      }
      for (unsigned i = 0; i < nt; ++i) {
        float& y = p.y[(t + i) * p.y_stride + r];
        y = p.accumulate ? y + out[i] : out[i];
      }
    }
  }
}

void fast_rows(const WeightView& w, const Plan& plan, uint64_t r0, uint64_t r1, const std::byte* x,
               uint64_t x_stride_bytes, uint32_t n, const Product& p) {
  if (n == 1 && plan.kernel.rows1) {
    plan.kernel.rows1(w.data + r0 * plan.row_bytes, plan.row_bytes, r1 - r0, w.cols, x, p.y + r0,
                      p.accumulate, w.data + w.rows * plan.row_bytes, kPrefetchDistance);
    return;
  }
  float out[detail::kMaxRowTokens];
  for (uint32_t t0 = 0; t0 < n; t0 += kTokenChunk) {
    const uint32_t t1 = std::min(n, t0 + kTokenChunk);
    uint64_t r = r0;
    if (plan.kernel.tile && t1 - t0 > 1) {
      float tile[4 * detail::kMaxTokensPerKernel];
      for (; r + 4 <= r1; r += 4) {
        const std::byte* row = w.data + r * plan.row_bytes;
        for (uint32_t t = t0; t < t1; t += detail::kMaxTokensPerKernel) {
          const unsigned nt = std::min<uint32_t>(detail::kMaxTokensPerKernel, t1 - t);
          plan.kernel.tile(row, plan.row_bytes, w.cols, x + t * x_stride_bytes, x_stride_bytes, nt,
                           tile);
          for (unsigned i = 0; i < nt; ++i) {
            for (unsigned k = 0; k < 4; ++k) {
              float& y = p.y[(t + i) * p.y_stride + r + k];
              y = p.accumulate ? y + tile[4 * k + i] : tile[4 * k + i];
            }
          }
        }
      }
    }
    const uint64_t tensor_bytes = w.rows * plan.row_bytes;
    for (; r < r1; ++r) {
      const std::byte* row = w.data + r * plan.row_bytes;
      if (t0 == 0) {  // later token chunks find the task's rows in L2
        const uint64_t from = r * plan.row_bytes + kPrefetchDistance;
        const uint64_t to = std::min(tensor_bytes, from + plan.row_bytes);
        for (uint64_t off = from; off < to; off += 64) __builtin_prefetch(w.data + off);
      }
      for (uint32_t t = t0; t < t1; t += plan.kernel.max_tokens) {
        const unsigned nt = std::min<uint32_t>(plan.kernel.max_tokens, t1 - t);
        plan.kernel.fn(row, w.cols, x + t * x_stride_bytes, x_stride_bytes, nt, out);
        for (unsigned i = 0; i < nt; ++i) {
          float& y = p.y[(t + i) * p.y_stride + r];
          y = p.accumulate ? y + out[i] : out[i];
        }
      }
    }
  }
}

}  // namespace

bool matmul_supports(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS:
    case TensorType::MXFP4:
      return true;
    default:
      return false;
  }
}

void matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
            ThreadPool& pool, MatmulWorkspace& ws) {
  matmul(products, x, x_stride, n, pool, ws, selected_isa());
}

void matmul(std::span<const Product> products, const float* x, uint64_t x_stride, uint32_t n,
            ThreadPool& pool, MatmulWorkspace& ws, Isa isa) {
  if (products.empty() || n == 0) return;
  isa = usable_isa(isa);
  const uint64_t cols = products[0].w->cols;
  uint64_t total_rows = 0, total_bytes = 0, max_row_bytes = 0;
  bool need[detail::kActFormats] = {};
  std::vector<Plan> plans(products.size());
  for (size_t i = 0; i < products.size(); ++i) {
    const WeightView& w = *products[i].w;
    if (!matmul_supports(w.type)) {
      throw std::invalid_argument("cpu matmul: unsupported weight type " +
                                  std::string(gguf::type_name(w.type)));
    }
    if (w.cols != cols) throw std::invalid_argument("cpu matmul: products differ in cols");
    if (cols == 0 || cols % gguf::traits(w.type).block_elements != 0) {
      throw std::invalid_argument("cpu matmul: cols " + std::to_string(cols) +
                                  " is not a multiple of the block size of " +
                                  std::string(gguf::type_name(w.type)));
    }
    plans[i].kernel = fast_kernel(isa, w.type);
    plans[i].row_bytes = gguf::row_bytes(w.type, cols);
    need[static_cast<int>(plans[i].kernel.fn ? plans[i].kernel.act : ActFormat::F32)] = true;
    total_rows += w.rows;
    total_bytes += w.rows * plans[i].row_bytes;
    max_row_bytes = std::max(max_row_bytes, plans[i].row_bytes);
  }
  if (isa >= Isa::Amx && n >= detail::amx_min_tokens(products)) {
    detail::amx_matmul(products, x, x_stride, n, pool, ws);
    return;
  }

  // Quantize the activations once per format any product needs.
  const uint64_t q8k_bytes = cols / gguf::kSuperBlock * sizeof(ActQ8K);
  const uint64_t q8_0_bytes = cols / gguf::kLegacyBlock * sizeof(ActQ8_0);
  const uint64_t q8_0u_bytes = detail::act_q8_0u_bytes(cols);
  std::vector<std::byte>& q8k = ws.buffer(0);
  std::vector<std::byte>& q80 = ws.buffer(1);
  std::vector<std::byte>& q80u = ws.buffer(2);
  const bool need_q8k = need[static_cast<int>(ActFormat::Q8_K)];
  const bool need_q80 = need[static_cast<int>(ActFormat::Q8_0)];
  const bool need_q80u = need[static_cast<int>(ActFormat::Q8_0U)];
  if (need_q8k && q8k.size() < n * q8k_bytes) q8k.resize(n * q8k_bytes);
  if (need_q80 && q80.size() < n * q8_0_bytes) q80.resize(n * q8_0_bytes);
  if (need_q80u && q80u.size() < n * q8_0u_bytes) q80u.resize(n * q8_0u_bytes);
  if (need_q8k || need_q80 || need_q80u) {
    auto quantize_token = [&](uint32_t t, unsigned) {
      if (need_q8k) {
        quantize_q8_k(x + t * x_stride, reinterpret_cast<ActQ8K*>(q8k.data() + t * q8k_bytes),
                      cols);
      }
      if (need_q80) {
        quantize_q8_0(x + t * x_stride, reinterpret_cast<ActQ8_0*>(q80.data() + t * q8_0_bytes),
                      cols);
      }
      if (need_q80u) quantize_q8_0u(x + t * x_stride, q80u.data() + t * q8_0u_bytes, cols);
    };
    if (n >= 4) {
      pool.parallel_for(n, quantize_token);
    } else {
      for (uint32_t t = 0; t < n; ++t) quantize_token(t, 0);
    }
  }

  // Rows of every product in one task list, about kTasksPerThread tasks a thread. Several token
  // chunks: each task small enough that its weights stay in L2 while the chunks pass over them.
  // One chunk: long stretches of the weight stream.
  const uint64_t target_tasks = uint64_t{pool.size()} * kTasksPerThread;
  uint64_t rows_per_task;
  if (n <= kTokenChunk) {
    const uint64_t task_bytes =
        std::clamp(total_bytes / target_tasks, kTaskWeightBytes, kStreamTaskBytes);
    rows_per_task = std::max<uint64_t>(4, task_bytes / max_row_bytes);
  } else {
    const uint64_t cache_rows = std::max<uint64_t>(4, kTaskWeightBytes / max_row_bytes);
    rows_per_task = std::max<uint64_t>(1, (total_rows + target_tasks - 1) / target_tasks);
    rows_per_task = std::min(std::max<uint64_t>(rows_per_task, 4), cache_rows);
  }
  uint64_t n_tasks = 0;
  for (size_t i = 0; i < products.size(); ++i) {
    plans[i].first_task = static_cast<uint32_t>(n_tasks);
    plans[i].rows_per_task = rows_per_task;
    n_tasks += (products[i].w->rows + rows_per_task - 1) / rows_per_task;
  }
  ws.reserve_threads(pool.size());
  const detail::RowKernel f32_dot = fast_kernel(isa, TensorType::F32).fn;

  pool.parallel_for(static_cast<uint32_t>(n_tasks), [&](uint32_t task, unsigned thread) {
    size_t p = products.size() - 1;
    while (plans[p].first_task > task) --p;
    const Product& prod = products[p];
    const Plan& plan = plans[p];
    const WeightView& w = *prod.w;
    const uint64_t r0 = (task - plan.first_task) * plan.rows_per_task;
    const uint64_t r1 = std::min(w.rows, r0 + plan.rows_per_task);
    if (!plan.kernel.fn) {
      generic_rows(w, plan.row_bytes, r0, r1, x, x_stride, n, prod, f32_dot, ws.scratch(thread));
      return;
    }
    switch (plan.kernel.act) {
      case ActFormat::Q8_K:
        fast_rows(w, plan, r0, r1, q8k.data(), q8k_bytes, n, prod);
        break;
      case ActFormat::Q8_0:
        fast_rows(w, plan, r0, r1, q80.data(), q8_0_bytes, n, prod);
        break;
      case ActFormat::Q8_0U:
        fast_rows(w, plan, r0, r1, q80u.data(), q8_0u_bytes, n, prod);
        break;
      case ActFormat::F32:
        fast_rows(w, plan, r0, r1, reinterpret_cast<const std::byte*>(x), x_stride * sizeof(float),
                  n, prod);
        break;
    }
  });
}

}  // namespace vkllm::cpu
