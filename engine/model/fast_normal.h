// The random numbers of generated fixtures (model_maker.h, lora_maker.h): fast, seeded, and the
// same on every machine, so a fixture's bytes follow from its parameters alone.
#pragma once

#include <cstdint>
#include <string_view>

namespace vkllm::model {

// splitmix64: a tiny, well-mixed generator; one draw yields four 16-bit uniforms whose sum,
// centred and scaled (Irwin-Hall), is a unit-variance bell curve. Exact normality does not
// matter for random weights; generating billions of them quickly does.
class FastNormal {
 public:
  explicit FastNormal(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float next() {
    const uint64_t r = next_u64();
    const uint32_t sum = static_cast<uint32_t>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                               ((r >> 32) & 0xffff) + (r >> 48));
    constexpr float kMean = 4 * 65535.0f / 2, kInvStd = 1.7320508f / 65536.0f;
    return (static_cast<float>(sum) - kMean) * kInvStd;
  }

 private:
  uint64_t state_;
};

inline uint64_t hash_name(std::string_view s, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace vkllm::model
