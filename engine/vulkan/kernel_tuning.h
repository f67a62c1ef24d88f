// The Vulkan kernels' tuning: the parameters measurements sweep (tile shapes, thresholds, split
// targets), with the defaults that won. Set by `vkllm bench --tune key=value` and its siblings
// (engine/runtime/tuning_keys.h lists the keys); carried by DeviceOptions to the Device, where the
// kernels read it. Never read from the environment.
#pragma once

#include <array>
#include <cstdint>

namespace vkllm::vk {

// Whether the int8-dot matvec kernels run where they exist: Auto picks them on devices whose
// 4x8-bit packed signed dot product is hardware-accelerated; On wherever shaderIntegerDotProduct
// is enabled (tests on lavapipe); Off never.
enum class Int8Dot { Auto, Off, On };

// Whether record_matmul runs on tensor cores where it can: Auto does, Off never (tests of the
// portable GEMM on any device).
enum class CoopMat { Auto, Off };

struct MatmulTuning {
  // matvec: threads per workgroup (a power of two) and weight rows per workgroup; 0: per-type
  // defaults.
  uint32_t matvec_threads = 0;
  uint32_t matvec_rows = 0;
  // F16 matvec on rows of a multiple of 8: 8 halves (16 bytes) a load instead of 4 (-1 or 1:
  // yes, the default; 0 no: bench_matmul_kernels' sweep compares them).
  int32_t matvec_f16_wide = -1;
  // Use the shared-memory reduction even when subgroup arithmetic is available (tests, fallback).
  bool shared_reduction = false;
  // matmul output tile: tokens x rows per workgroup and per thread (0: chosen from the device).
  uint32_t tile_tokens = 0, tile_rows = 0, thread_tokens = 0, thread_rows = 0;
  Int8Dot int8_dot = Int8Dot::Auto;
  // int8-dot matvec: threads and rows per workgroup (0: defaults).
  uint32_t q8_threads = 0, q8_rows = 0;
  CoopMat coopmat = CoopMat::Auto;
  // Tensor-core GEMM: subgroups per workgroup along tokens and rows, and 16x16 fragments per
  // subgroup along each (0: chosen from the token count; tile = 16 * warps * frags each way).
  uint32_t cm_warps_m = 0, cm_warps_n = 0, cm_frags_m = 0, cm_frags_n = 0;
  // Tensor-core GEMM: how a K slice is loaded (-1: the tile's default; 0 item
  // by item; 1 all global loads before any conversion and store; 2 software-pipelined, the next
  // slice's raw words loaded while this one multiplies, for F16/Q8_0/Q4_K/Q5_K/Q6_K weights with
  // f16 activations, else as 1).
  int32_t cm_batched_loads = -1;
  // Tensor-core GEMM: convert the activations to f16 rows once per product (shaders/to_f16.comp)
  // instead of in every output tile's loads (-1 or 1: yes, the default; 0 no).
  int32_t cm_x_f16 = -1;
  // Tensor-core split-K: where the output tiles number fewer than half of this many workgroups
  // per compute unit, K is split so that the grid reaches about that many. -1: 8 up to 64 tokens
  // and 4 above; 0: never (one workgroup walks the whole K of its tile).
  int32_t cm_split_per_cu = -1;
  // Fewest 32-wide K slices a split walks (0: 8): shorter splits
  // spend more on writing and summing partials than they gain in parallelism.
  uint32_t cm_split_min_slices = 0;
  // Tensor-core GEMM with pipelined loads: decode the weights in f16 arithmetic straight into the
  // f16 tiles (-1 or 1: yes, the default; 0 no: in f32, then converted).
  int32_t cm_decode_f16 = -1;
  // Exactly this many K splits (at most one per K slice) whatever the grid; 0: the rule above.
  uint32_t cm_splits = 0;
  // Tensor-core GEMM: K per slice (32, 64 or 128) and shared buffers per tile (1 or 2); 0: the
  // defaults.
  uint32_t cm_slice_k = 0, cm_stages = 0;
  // Whole-model A/B runs of the tensor-core tiles by product size: prefill (above 64 tokens) and
  // batched decode (17..64) tiles as {warps_m, warps_n, frags_m, frags_n} and slices as
  // {slice_k, stages}; zeros keep the defaults (the cm_* fields above override all sizes).
  std::array<uint32_t, 4> cm_prefill_tile{}, cm_decode_tile{};
  std::array<uint32_t, 2> cm_prefill_slice{}, cm_decode_slice{};
  // Workgroup-scope tensor-core GEMM (VK_NV_cooperative_matrix2, shaders/matmul_cm2.comp;
  // other weight types decoded to f16 first): Auto uses it where the device offers it, for
  // products of at least cm2_min_tokens tokens (0: kCoopMat2MinTokens, kCoopMat2MinTokensF16 for
  // f16 weights).
  CoopMat coopmat2 = CoopMat::Auto;
  uint32_t cm2_min_tokens = 0;
  // Weight rows decoded to f16 per chunk (a multiple of 128; 0: cm2_chunk_mb MiB of f16 rows,
  // and cm2_chunk_mb 0: a 128th of device memory, between 16 and 128 MiB).
  uint32_t cm2_chunk_rows = 0;
  uint32_t cm2_chunk_mb = 0;
};

// Everything the kernels take from the tuning.
struct KernelTuning {
  MatmulTuning matmul;
  // Workgroups per compute unit that decode attention's split-K aims at (prefill: 4x). On an
  // H100, 8B decode at 16k/32k of context was fastest at 4 (bench/RESULTS.md).
  uint32_t attn_split_target = 4;
  // Workgroups per KV head of the chunked decode attention kernel (0: fit to the grid).
  uint32_t attn_head_groups = 0;
  // Mixture-of-experts steps of at least this many (token, expert) pairs group the pairs by
  // expert and run the grouped GEMMs; smaller ones the indirect matvec (0: auto, max(128, 2 x
  // experts); runtime/vulkan_backend_moe.cpp says why).
  uint32_t moe_grouped_min_pairs = 0;
  // Below that, steps of at least this many pairs group them too but run the grouped products on
  // the decode kernel, each expert's rows read once per 8 of its pairs; smaller ones the indirect
  // matvec (0: auto, the experts' count; runtime/vulkan_backend_moe.cpp).
  uint32_t moe_matvec_groups_min_pairs = 0;
  // Mamba-2's chunked scan (shaders/ssm_scan_chunked.comp): tokens per chunk (16 or 32) and head
  // rows per workgroup (4, 8, 16 or 32); 0: 32 tokens and the most rows up to 16 that fit the
  // device's shared memory (a choice that does not fit falls back to that).
  uint32_t ssm_chunk_len = 0, ssm_chunk_rows = 0;
  // How long the host polls a step's fence before sleeping on it, in microseconds (-1: 2000 on
  // GPUs, 0 on CPU devices, whose workers need the cores).
  int32_t fence_spin_us = -1;
  // Each new pipeline prints the driver's register and shared-memory counts (diagnostics; needs
  // VK_KHR_pipeline_executable_properties).
  bool pipeline_stats = false;
};

}  // namespace vkllm::vk
