#include "engine/runtime/tuning_keys.h"

#include <array>
#include <charconv>
#include <stdexcept>

namespace vkllm::runtime {

namespace {

uint32_t parse_u32(std::string_view v, uint32_t lo, uint32_t hi) {
  uint32_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || n < lo || n > hi)
    throw std::invalid_argument("expected a whole number from " + std::to_string(lo) + " to " +
                                std::to_string(hi) + ", got '" + std::string(v) + "'");
  return n;
}

bool parse_bool(std::string_view v) {
  if (v == "1" || v == "on" || v == "true") return true;
  if (v == "0" || v == "off" || v == "false") return false;
  throw std::invalid_argument("expected 0 or 1, got '" + std::string(v) + "'");
}

// "a,b,..." of exactly N whole numbers.
template <size_t N>
std::array<uint32_t, N> parse_list(std::string_view v, uint32_t hi) {
  std::array<uint32_t, N> out{};
  for (size_t i = 0; i < N; ++i) {
    const size_t comma = v.find(',');
    if ((comma == std::string_view::npos) != (i + 1 == N))
      throw std::invalid_argument("expected " + std::to_string(N) + " comma-separated numbers");
    out[i] = parse_u32(v.substr(0, comma), 1, hi);
    v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
  }
  return out;
}

vk::MatmulTuning& matmul_of(TuningTarget& t) {
  return t.kernels.matmul;
}

constexpr TuningKey kKeys[] = {
    // The runner's step shape.
    {"matvec_max_batch", "16",
     "steps of at most this many tokens use the decode (matvec) kernels, larger ones the GEMM",
     [](TuningTarget& t, std::string_view v) {
       t.runner.matvec_max_batch = parse_u32(v, 0, 4096);
     }},
    {"delta_net_chunk_min", "auto",
     "Gated DeltaNet: sequences of at least this many tokens in a step run the chunked delta "
     "rule, fewer the recurrent one (0: always recurrent; auto: 16 on Vulkan, 0 on the CPU)",
     [](TuningTarget& t, std::string_view v) {
       t.runner.delta_net_chunk_min = parse_u32(v, 0, 1u << 20);
     }},
    {"int8_dot", "auto", "decode products on int8-quantized activations: auto, on, off",
     [](TuningTarget& t, std::string_view v) {
       if (v == "auto")
         t.runner.int8_dot = vk::Int8Dot::Auto;
       else if (v == "on" || v == "1")
         t.runner.int8_dot = vk::Int8Dot::On;
       else if (v == "off" || v == "0")
         t.runner.int8_dot = vk::Int8Dot::Off;
       else
         throw std::invalid_argument("expected auto, on or off, got '" + std::string(v) + "'");
     }},
    {"step_parts", "8", "a step is submitted in this many parts, so the GPU starts early",
     [](TuningTarget& t, std::string_view v) { t.runner.step_parts = parse_u32(v, 1, 64); }},
    {"record_ahead", "auto",
     "record the next decode step while one runs (auto: on GPUs, not on CPU devices): 0 or 1",
     [](TuningTarget& t, std::string_view v) { t.runner.record_ahead = parse_bool(v); }},
    {"profile", "0",
     "1: GPU timestamps around each phase of one layer (profile_layer; vkllm bench prints them)",
     [](TuningTarget& t, std::string_view v) { t.runner.profile = parse_bool(v); }},
    {"profile_layer", "1", "the layer profile times (0 to the last)",
     [](TuningTarget& t, std::string_view v) { t.runner.profile_layer = parse_u32(v, 0, 65535); }},
    // The decode kernels.
    {"matvec_threads", "auto", "threads per workgroup of every float-activation matvec (2^n)",
     [](TuningTarget& t, std::string_view v) {
       const uint32_t n = parse_u32(v, 1, 1024);
       if (n & (n - 1)) throw std::invalid_argument("expected a power of two");
       matmul_of(t).matvec_threads = n;
     }},
    {"matvec_rows", "auto", "weight rows per workgroup of every float-activation matvec",
     [](TuningTarget& t, std::string_view v) { matmul_of(t).matvec_rows = parse_u32(v, 1, 64); }},
    // The tensor-core GEMM.
    {"coopmat_tile", "auto", "prefill (over 64 tokens) tile: warps_m,warps_n,frags_m,frags_n",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_prefill_tile = parse_list<4>(v, 16);
     }},
    {"coopmat_tile_decode", "auto", "batched decode (17-64 tokens) tile, as coopmat_tile",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_decode_tile = parse_list<4>(v, 16);
     }},
    {"coopmat_slice", "auto", "prefill K slice and shared buffers: k,stages (32|64|128, 1|2)",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_prefill_slice = parse_list<2>(v, 128);
     }},
    {"coopmat_slice_decode", "auto", "batched decode K slice, as coopmat_slice",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_decode_slice = parse_list<2>(v, 128);
     }},
    {"coopmat_loads", "auto", "how a K slice is loaded: 0 item by item, 1 batched, 2 pipelined",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_batched_loads = static_cast<int32_t>(parse_u32(v, 0, 2));
     }},
    {"coopmat_split", "auto",
     "workgroups per compute unit split-K aims at (auto: 8 up to 64 tokens, 4 above; 0: never)",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_split_per_cu = static_cast<int32_t>(parse_u32(v, 0, 64));
     }},
    {"coopmat_split_min", "8", "fewest 32-wide K slices one split walks",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm_split_min_slices = parse_u32(v, 1, 4096);
     }},
    {"coopmat2_min", "auto", "fewest tokens of the workgroup-scope GEMM (auto: 128, F16 weights 2)",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm2_min_tokens = parse_u32(v, 1, 1u << 20);
     }},
    {"coopmat2_chunk_mb", "auto", "MiB of weights decoded to f16 per chunk (auto: 16-128)",
     [](TuningTarget& t, std::string_view v) {
       matmul_of(t).cm2_chunk_mb = parse_u32(v, 1, 4096);
     }},
    {"ssm_chunk_min_tokens", "auto",
     "Mamba-2 sequences bringing at least this many tokens to a step run the chunked scan, fewer "
     "the recurrence (auto: 3 on the CPU, 32 on Vulkan)",
     [](TuningTarget& t, std::string_view v) {
       t.runner.ssm_chunk_min_tokens = parse_u32(v, 1, 1u << 24);
     }},
    {"ssm_chunk_len", "16", "tokens per chunk of the Vulkan Mamba-2 chunked scan: 16 or 32",
     [](TuningTarget& t, std::string_view v) {
       const uint32_t n = parse_u32(v, 16, 32);
       if (n != 16 && n != 32) throw std::invalid_argument("expected 16 or 32");
       t.kernels.ssm_chunk_len = n;
     }},
    {"ssm_chunk_rows", "auto",
     "head rows per workgroup of the Vulkan Mamba-2 chunked scan: 4, 8, 16 or 32 (auto: 16 where "
     "shared memory holds them)",
     [](TuningTarget& t, std::string_view v) {
       const uint32_t n = parse_u32(v, 4, 32);
       if (n & (n - 1)) throw std::invalid_argument("expected 4, 8, 16 or 32");
       t.kernels.ssm_chunk_rows = n;
     }},
    // Attention.
    {"attn_split_target", "4", "workgroups per compute unit decode attention's split-K aims at",
     [](TuningTarget& t, std::string_view v) {
       t.kernels.attn_split_target = parse_u32(v, 1, 64);
     }},
    {"attn_head_groups", "auto", "workgroups per KV head of the chunked decode attention",
     [](TuningTarget& t, std::string_view v) { t.kernels.attn_head_groups = parse_u32(v, 1, 64); }},
    // Mixture of experts.
    {"moe_grouped_min_pairs", "auto",
     "MoE steps of at least this many token-expert pairs run grouped expert GEMMs, smaller ones "
     "the grouped decode kernel or the indirect matvec (auto: max(128, 16 x experts))",
     [](TuningTarget& t, std::string_view v) {
       t.kernels.moe_grouped_min_pairs = parse_u32(v, 1, 1u << 24);
     }},
    {"moe_matvec_groups_min_pairs", "auto",
     "MoE steps of at least this many token-expert pairs (and fewer than moe_grouped_min_pairs) "
     "group them by expert on the decode kernel (auto: the experts' count)",
     [](TuningTarget& t, std::string_view v) {
       t.kernels.moe_matvec_groups_min_pairs = parse_u32(v, 1, 1u << 24);
     }},
    // Submission and diagnostics.
    {"fence_spin_us", "auto",
     "microseconds the host polls a step's fence (auto: 2000 on GPUs, 0 on CPU devices)",
     [](TuningTarget& t, std::string_view v) {
       t.kernels.fence_spin_us = static_cast<int32_t>(parse_u32(v, 0, 1000000));
     }},
    {"pipeline_stats", "0", "1: each new pipeline prints the driver's register and memory counts",
     [](TuningTarget& t, std::string_view v) { t.kernels.pipeline_stats = parse_bool(v); }},
};

}  // namespace

std::span<const TuningKey> tuning_keys() {
  return kKeys;
}

void apply_tuning(std::string_view assignment, TuningTarget target) {
  const size_t eq = assignment.find('=');
  const std::string_view name = assignment.substr(0, eq);
  if (eq == std::string_view::npos)
    throw std::invalid_argument("--tune " + std::string(assignment) + ": expected key=value");
  for (const TuningKey& key : kKeys) {
    if (key.name != name) continue;
    try {
      key.apply(target, assignment.substr(eq + 1));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--tune " + std::string(name) + ": " + e.what());
    }
    return;
  }
  std::string known;
  for (const TuningKey& key : kKeys) known += (known.empty() ? "" : ", ") + std::string(key.name);
  throw std::invalid_argument("--tune: unknown key '" + std::string(name) + "' (known: " + known +
                              ")");
}

std::string tuning_help() {
  std::string out;
  for (const TuningKey& key : kKeys) {
    out += "  " + std::string(key.name) + " (default " + std::string(key.default_value) +
           "): " + std::string(key.description) + "\n";
  }
  return out;
}

}  // namespace vkllm::runtime
