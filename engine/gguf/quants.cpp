// Format dispatch for quants.h; splits large tensors across threads at block boundaries.
#include "engine/gguf/quants.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/quants_detail.h"

namespace vkllm::gguf {

namespace {

using detail::FormatKernels;

const FormatKernels* find_kernels(TensorType type) {
  for (auto table : {detail::float_kernels(), detail::legacy_kernels(), detail::k_kernels(),
                     detail::iq_kernels(), detail::fp4_kernels()}) {
    for (const auto& k : table) {
      if (k.type == type) return &k;
    }
  }
  return nullptr;
}

std::string describe(TensorType type) {
  if (auto t = type_traits(static_cast<uint32_t>(type))) return std::string(t->name);
  return "ggml type id " + std::to_string(static_cast<uint32_t>(type));
}

// Below this many blocks a thread costs more than it saves.
constexpr size_t kMinBlocksPerThread = 256;

// Runs body(first_block, block_count) over [0, blocks) on up to `threads` threads.
template <typename Body>
void for_block_ranges(size_t blocks, unsigned threads, Body body) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t useful = std::max<size_t>(1, blocks / kMinBlocksPerThread);
  const size_t workers = std::min<size_t>(threads, useful);
  if (workers <= 1) {
    body(size_t{0}, blocks);
    return;
  }
  const size_t per_worker = (blocks + workers - 1) / workers;
  std::vector<std::jthread> pool;
  pool.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) {
    const size_t first = std::min(blocks, w * per_worker);
    const size_t count = std::min(blocks, first + per_worker) - first;
    if (count > 0) pool.emplace_back([=] { body(first, count); });
  }
  body(0, std::min(blocks, per_worker));
}

const FormatKernels& checked_kernels(TensorType type, size_t n, bool quantizing) {
  const FormatKernels* k = find_kernels(type);
  if (k == nullptr || (quantizing && k->quantize == nullptr)) {
    throw std::invalid_argument(std::string(quantizing ? "quantize" : "dequantize") +
                                ": unsupported tensor type " + describe(type));
  }
  if (n % k->block_elements != 0) {
    throw std::invalid_argument(std::string(quantizing ? "quantize" : "dequantize") + ": " +
                                std::to_string(n) + " elements is not a multiple of the " +
                                std::to_string(k->block_elements) + "-element block of " +
                                describe(type));
  }
  return *k;
}

}  // namespace

bool can_dequantize(TensorType type) {
  return find_kernels(type) != nullptr;
}

bool can_quantize(TensorType type) {
  const FormatKernels* k = find_kernels(type);
  return k != nullptr && k->quantize != nullptr;
}

size_t quantized_size(TensorType type, size_t n) {
  const FormatKernels& k = checked_kernels(type, n, false);
  return n / k.block_elements * k.block_bytes;
}

void dequantize(TensorType type, const void* src, float* dst, size_t n, unsigned threads) {
  const FormatKernels& k = checked_kernels(type, n, false);
  const auto* bytes = static_cast<const uint8_t*>(src);
  for_block_ranges(n / k.block_elements, threads, [&](size_t first, size_t count) {
    k.dequantize(bytes + first * k.block_bytes, dst + first * k.block_elements, count);
  });
}

void quantize(TensorType type, const float* src, void* dst, size_t n, unsigned threads) {
  const FormatKernels& k = checked_kernels(type, n, true);
  auto* bytes = static_cast<uint8_t*>(dst);
  for_block_ranges(n / k.block_elements, threads, [&](size_t first, size_t count) {
    k.quantize(src + first * k.block_elements, bytes + first * k.block_bytes, count);
  });
}

void dequantize(TensorType type, const void* src, float* dst, size_t n) {
  dequantize(type, src, dst, n, 0);
}

void quantize(TensorType type, const float* src, void* dst, size_t n) {
  quantize(type, src, dst, n, 0);
}

}  // namespace vkllm::gguf
