// --tune key=value: every key reaches the field it names, bad values and unknown keys are refused
// with the key in the message, and the help lists every key.
#include "engine/runtime/tuning_keys.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace vkllm::runtime {
namespace {

struct Tuned {
  RunnerOptions runner;
  vk::KernelTuning kernels;
  void tune(const std::string& assignment) { apply_tuning(assignment, {runner, kernels}); }
};

std::string refusal(const std::string& assignment) {
  Tuned t;
  try {
    t.tune(assignment);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(TuningKeys, EachKeyReachesItsField) {
  Tuned t;
  t.tune("matvec_max_batch=32");
  t.tune("int8_dot=off");
  t.tune("step_parts=3");
  t.tune("record_ahead=0");
  t.tune("profile=1");
  t.tune("matvec_threads=128");
  t.tune("matvec_rows=4");
  t.tune("coopmat_tile=2,2,4,4");
  t.tune("coopmat_tile_decode=1,4,2,1");
  t.tune("coopmat_slice=64,1");
  t.tune("coopmat_slice_decode=32,2");
  t.tune("coopmat_loads=0");
  t.tune("coopmat_split=0");
  t.tune("coopmat_split_min=4");
  t.tune("coopmat2_min=256");
  t.tune("coopmat2_chunk_mb=64");
  t.tune("attn_split_target=8");
  t.tune("attn_head_groups=2");
  t.tune("moe_grouped_min_pairs=512");
  t.tune("delta_net_chunk_min=0");
  t.tune("ssm_chunk_min_tokens=64");
  t.tune("ssm_chunk_len=32");
  t.tune("ssm_chunk_rows=8");
  t.tune("fence_spin_us=0");
  t.tune("pipeline_stats=1");
  t.tune("profile_layer=4");
  EXPECT_EQ(t.runner.matvec_max_batch, 32u);
  EXPECT_EQ(t.runner.delta_net_chunk_min, std::optional<uint32_t>(0));
  EXPECT_EQ(t.runner.int8_dot, vk::Int8Dot::Off);
  EXPECT_EQ(t.runner.step_parts, 3u);
  EXPECT_EQ(t.runner.record_ahead, std::optional<bool>(false));
  EXPECT_TRUE(t.runner.profile);
  EXPECT_EQ(t.runner.profile_layer, 4u);
  const vk::MatmulTuning& m = t.kernels.matmul;
  EXPECT_EQ(m.matvec_threads, 128u);
  EXPECT_EQ(m.matvec_rows, 4u);
  EXPECT_EQ(m.cm_prefill_tile, (std::array<uint32_t, 4>{2, 2, 4, 4}));
  EXPECT_EQ(m.cm_decode_tile, (std::array<uint32_t, 4>{1, 4, 2, 1}));
  EXPECT_EQ(m.cm_prefill_slice, (std::array<uint32_t, 2>{64, 1}));
  EXPECT_EQ(m.cm_decode_slice, (std::array<uint32_t, 2>{32, 2}));
  EXPECT_EQ(m.cm_batched_loads, 0);
  EXPECT_EQ(m.cm_split_per_cu, 0);
  EXPECT_EQ(m.cm_split_min_slices, 4u);
  EXPECT_EQ(m.cm2_min_tokens, 256u);
  EXPECT_EQ(m.cm2_chunk_mb, 64u);
  EXPECT_EQ(t.kernels.attn_split_target, 8u);
  EXPECT_EQ(t.kernels.attn_head_groups, 2u);
  EXPECT_EQ(t.kernels.moe_grouped_min_pairs, 512u);
  EXPECT_EQ(t.runner.ssm_chunk_min_tokens, 64u);
  EXPECT_EQ(t.kernels.ssm_chunk_len, 32u);
  EXPECT_EQ(t.kernels.ssm_chunk_rows, 8u);
  EXPECT_EQ(t.kernels.fence_spin_us, 0);
  EXPECT_TRUE(t.kernels.pipeline_stats);
}

TEST(TuningKeys, DefaultsAreTheWinners) {
  // What the engine runs without --tune: the keys' documented defaults.
  const RunnerOptions r;
  const vk::KernelTuning k;
  EXPECT_EQ(r.matvec_max_batch, 16u);
  EXPECT_EQ(r.step_parts, 8u);
  EXPECT_FALSE(r.delta_net_chunk_min);  // auto
  EXPECT_EQ(delta_net_chunk_min_for(r, true), 0u);
  EXPECT_EQ(delta_net_chunk_min_for(r, false), 16u);
  EXPECT_EQ(k.attn_split_target, 4u);
  EXPECT_EQ(k.fence_spin_us, -1);
  EXPECT_FALSE(k.pipeline_stats);
  EXPECT_EQ(k.moe_grouped_min_pairs, 0u);  // auto
  EXPECT_EQ(r.ssm_chunk_min_tokens, 0u);   // auto: the backend's
  EXPECT_EQ(k.matmul.cm_split_per_cu, -1);
  EXPECT_EQ(k.matmul.cm_prefill_tile, (std::array<uint32_t, 4>{}));
}

TEST(TuningKeys, BadInputIsRefusedByName) {
  EXPECT_EQ(refusal("int8_dot=maybe"), "--tune int8_dot: expected auto, on or off, got 'maybe'");
  EXPECT_EQ(refusal("matvec_threads=96"), "--tune matvec_threads: expected a power of two");
  EXPECT_EQ(refusal("step_parts=0"),
            "--tune step_parts: expected a whole number from 1 to 64, got '0'");
  EXPECT_EQ(refusal("coopmat_tile=2,2,4"),
            "--tune coopmat_tile: expected 4 comma-separated numbers");
  EXPECT_EQ(refusal("coopmat_tile=2,2,4,4,1"),
            "--tune coopmat_tile: expected 4 comma-separated numbers");
  EXPECT_EQ(refusal("profile"), "--tune profile: expected key=value");
  EXPECT_EQ(refusal("ssm_chunk_len=24"), "--tune ssm_chunk_len: expected 16 or 32");
  EXPECT_EQ(refusal("ssm_chunk_rows=12"), "--tune ssm_chunk_rows: expected 4, 8, 16 or 32");
  const std::string unknown = refusal("fused_norm=1");
  EXPECT_EQ(unknown.rfind("--tune: unknown key 'fused_norm' (known: matvec_max_batch,", 0), 0u)
      << unknown;
}

TEST(TuningKeys, HelpListsEveryKey) {
  const std::string help = tuning_help();
  for (const TuningKey& key : tuning_keys())
    EXPECT_NE(help.find("  " + std::string(key.name) + " (default "), std::string::npos)
        << key.name;
}

}  // namespace
}  // namespace vkllm::runtime
