#include "engine/cpu/kv_rows.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/gguf/quants.h"

namespace vkllm::cpu {

using kv::CacheType;
using kv::kQuantBlock;

namespace {

void set_scale(uint32_t* row, uint32_t first, uint32_t block, uint16_t d) {
  uint16_t* scales = reinterpret_cast<uint16_t*>(row + first);  // little-endian f16 pairs
  scales[block] = d;
}
float get_scale(const uint32_t* row, uint32_t first, uint32_t block) {
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + first);
  return gguf::fp16_to_fp32(scales[block]);
}

}  // namespace

void quantize_kv_row(CacheType type, const float* x, uint32_t head_dim, uint32_t* row) {
  if (!kv::cache_type_fits(type, head_dim))
    throw std::invalid_argument("KV cache type " + std::string(kv::cache_type_name(type)) +
                                " needs a head dimension that is a multiple of 32, not " +
                                std::to_string(head_dim));
  if (type == CacheType::F16) {
    uint16_t* h = reinterpret_cast<uint16_t*>(row);
    for (uint32_t i = 0; i < head_dim; ++i) h[i] = gguf::fp32_to_fp16(x[i]);
    return;
  }
  const uint32_t first = kv::scale_word(type, head_dim);
  row[kv::row_words(type, head_dim) - 1] = 0;  // the padding half of an odd block count
  uint8_t* q = reinterpret_cast<uint8_t*>(row);
  for (uint32_t b = 0; b < head_dim / kQuantBlock; ++b) {
    const float* v = x + b * kQuantBlock;
    if (type == CacheType::Q8_0) {
      float amax = 0.f;
      for (uint32_t i = 0; i < kQuantBlock; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
      for (uint32_t i = 0; i < kQuantBlock; ++i)
        q[b * kQuantBlock + i] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(v[i] * id)));
      set_scale(row, first, b, gguf::fp32_to_fp16(d));
    } else {
      float amax = 0.f, max = 0.f;  // the value of largest magnitude, with its sign
      for (uint32_t i = 0; i < kQuantBlock; ++i) {
        if (std::fabs(v[i]) > amax) {
          amax = std::fabs(v[i]);
          max = v[i];
        }
      }
      const float d = max / -8.f, id = d != 0.f ? 1.f / d : 0.f;
      uint8_t* qb = q + b * kQuantBlock / 2;
      for (uint32_t i = 0; i < kQuantBlock; i += 2) {
        const auto nib = [&](float f) {
          return static_cast<uint8_t>(std::min(15, static_cast<int>(f * id + 8.5f)));
        };
        qb[i / 2] = static_cast<uint8_t>(nib(v[i]) | (nib(v[i + 1]) << 4));
      }
      set_scale(row, first, b, gguf::fp32_to_fp16(d));
    }
  }
}

void dequantize_kv_row(CacheType type, const uint32_t* row, uint32_t head_dim, float* x) {
  if (type == CacheType::F16) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(row);
    for (uint32_t i = 0; i < head_dim; ++i) x[i] = gguf::fp16_to_fp32(h[i]);
    return;
  }
  const uint32_t first = kv::scale_word(type, head_dim);
  const uint8_t* q = reinterpret_cast<const uint8_t*>(row);
  for (uint32_t b = 0; b < head_dim / kQuantBlock; ++b) {
    const float d = get_scale(row, first, b);
    float* o = x + b * kQuantBlock;
    if (type == CacheType::Q8_0) {
      for (uint32_t i = 0; i < kQuantBlock; ++i)
        o[i] = static_cast<float>(static_cast<int8_t>(q[b * kQuantBlock + i])) * d;
    } else {
      const uint8_t* qb = q + b * kQuantBlock / 2;
      for (uint32_t i = 0; i < kQuantBlock; i += 2) {
        o[i] = static_cast<float>(int(qb[i / 2] & 0xF) - 8) * d;
        o[i + 1] = static_cast<float>(int(qb[i / 2] >> 4) - 8) * d;
      }
    }
  }
}

}  // namespace vkllm::cpu
