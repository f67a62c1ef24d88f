#include "engine/vulkan/coopmat_tile.h"

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace vkllm::vk::detail {

using gguf::TensorType;

namespace {

// Tiles by token count: 128 tokens x 64 rows (8 subgroups, 2 x 2 fragments each) for prefill;
// narrower token tiles for batched decode, so 9..64 tokens do not multiply padding: 64 rows on
// four subgroups of one 16-row fragment each. On an H100 (bench_matmul_kernels
// sweep_coopmat/sweep_cmtile, Q4_K 14336 x 4096, bench/RESULTS.md) 128 x 64 took 706 us at 512
// tokens against 844 for 128 x 128 (whose 172 registers per invocation leave one workgroup per
// SM). With the pipelined loads, 64-row decode tiles beat 128-row ones of eight subgroups end to
// end (tenth session: 8B Q4_K_M at 32 sequences +5%, at 64 +4%; 1B at 64 +10%); 32-row tiles
// and two-subgroup workgroups lost.
// K slices and weight types (eleventh session, H100, end to end, A/B in one call each):
// - 17..32 tokens: 64 wide in one shared buffer (32 sequences: 8B Q4_K_M +2-9%, Q8_0 +12-15%,
//   1B Q4_K_M +9-18%, F16 +2-20%);
// - 33..64 tokens: the same for quantized weights (64 sequences: 8B Q4_K_M +2-7%, Q8_0 0-4%, 1B
//   Q4_K_M 0-9%); F16 lost 4-15% and keeps 32 wide in two buffers;
// - prefill, Q8_0: 128 x 128 tiles of four 64 x 64 subgroups, 64-wide slices (8B Q8_0 prefill
//   512 6970 -> 7384 tok/s; the same tile cost 8B Q4_K_M 10%);
// - prefill, Q4_K / Q6_K: 64-wide slices in one buffer, loaded batched rather than pipelined
//   (fewer registers: 8B Q4_K_M prefill 512 +3.5%, 1B +4%; the same lost 26% on F16, 9% on Q8_0).
CoopMatTile default_coopmat_tile(uint32_t batch, TensorType type) {
  const bool quantized = type != TensorType::F16;
  if (batch > kCoopDecodeTokens) {
    if (type == TensorType::Q8_0) return {2, 2, 4, 4, 2, 64, 1};
    if (type == TensorType::Q4_K || type == TensorType::Q6_K) return {4, 2, 2, 2, 1, 64, 1};
    return {4, 2, 2, 2};
  }
  if (batch > 32) return quantized ? CoopMatTile{1, 4, 4, 1, 2, 64, 1} : CoopMatTile{1, 4, 4, 1};
  if (batch > 16) return {1, 4, 2, 1, 2, 64, 1};
  return {1, 4, 1, 1};
}

}  // namespace

uint64_t coopmat_shared_bytes(const CoopMatTile& t) {
  return uint64_t{t.stages} * (t.tokens() + t.rows()) * (t.slice_k + 8) * 2 +
         uint64_t{t.warps_m} * t.warps_n * 1024;
}

// The default tile with the tuning's overrides: the whole-model ones by product size, then those
// for every size.
CoopMatTile coopmat_tile(const MatmulTuning& t, uint32_t batch, bool x_f16, TensorType type) {
  CoopMatTile tile = default_coopmat_tile(batch, type);
  const bool prefill = batch > kCoopDecodeTokens, decode = batch > 16 && !prefill;
  const std::array<uint32_t, 4>& sized_tile = prefill ? t.cm_prefill_tile : t.cm_decode_tile;
  if ((prefill || decode) && sized_tile[0]) {
    tile.warps_m = sized_tile[0];
    tile.warps_n = sized_tile[1];
    tile.frags_m = sized_tile[2];
    tile.frags_n = sized_tile[3];
  }
  if (t.cm_warps_m) tile.warps_m = t.cm_warps_m;
  if (t.cm_warps_n) tile.warps_n = t.cm_warps_n;
  if (t.cm_frags_m) tile.frags_m = t.cm_frags_m;
  if (t.cm_frags_n) tile.frags_n = t.cm_frags_n;
  // With f16 activations the software pipeline (2, unless the tile says 1; types without split
  // decoders batch their loads instead): on an H100, Q4_K 14336 x 4096 at 512 tokens 549 us against
  // 710 batched and 917 item by item, at 64 tokens 117 / 137 / 189; F16 weights 501 against 1071
  // batched. With f32 activations item by item: batching them costs more registers than it saves
  // (1489 us against 972).
  tile.batched_loads = t.cm_batched_loads >= 0 ? static_cast<uint32_t>(t.cm_batched_loads)
                       : x_f16                 ? tile.batched_loads
                                               : 0;
  const std::array<uint32_t, 2>& sized_slice = prefill ? t.cm_prefill_slice : t.cm_decode_slice;
  if ((prefill || decode) && sized_slice[0]) {
    tile.slice_k = sized_slice[0];
    tile.stages = sized_slice[1];
  }
  if (t.cm_slice_k) tile.slice_k = t.cm_slice_k;
  if (t.cm_stages) tile.stages = t.cm_stages;
  return tile;
}

void check_coopmat_tile(const CoopMatTile& tile, const DeviceCapabilities& caps) {
  const uint64_t threads = uint64_t{tile.warps_m} * tile.warps_n * caps.subgroup_size;
  if (!tile.warps_m || !tile.warps_n || !tile.frags_m || !tile.frags_n ||
      threads > caps.max_workgroup_invocations || threads > caps.max_workgroup_size[0])
    throw std::invalid_argument("MatmulTuning: tensor-core tile of " + std::to_string(threads) +
                                " threads is empty or too large");
  if ((tile.slice_k != 32 && tile.slice_k != 64 && tile.slice_k != 128) ||
      (tile.stages != 1 && tile.stages != 2))
    throw std::invalid_argument("MatmulTuning: tensor-core slices of " +
                                std::to_string(tile.slice_k) + " in " +
                                std::to_string(tile.stages) + " buffers (32, 64 or 128 in 1 or 2)");
  if (coopmat_shared_bytes(tile) > caps.max_shared_memory)
    throw std::invalid_argument(
        "MatmulTuning: tensor-core tile needs " + std::to_string(coopmat_shared_bytes(tile)) +
        " bytes of shared memory, the device has " + std::to_string(caps.max_shared_memory));
}

}  // namespace vkllm::vk::detail
