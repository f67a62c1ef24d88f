#include "engine/model/qwen35_spec.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/weight_check.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

namespace {

constexpr uint32_t kDefaultFullAttentionInterval = 4;

uint32_t required_u32(const gguf::GgufFile& f, const std::string& key) {
  const auto v = f.get_optional<uint32_t>(key);
  if (!v || *v == 0) throw std::runtime_error("model metadata is missing " + key);
  return *v;
}

void read_recurrent_layers(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  s.layer_is_recurrent.assign(s.n_layer, false);
  const std::string key = p + "attention.recurrent_layers";
  if (f.find(key)) {
    const std::vector<bool> recurrent = f.get_array<bool>(key);
    if (recurrent.size() < s.n_layer) {
      throw std::runtime_error(key + " has " + std::to_string(recurrent.size()) + " entries for " +
                               std::to_string(s.n_layer) + " layers");
    }
    for (uint32_t l = 0; l < s.n_layer; ++l) s.layer_is_recurrent[l] = recurrent[l];
    return;
  }
  const uint32_t interval = f.get_optional<uint32_t>(p + "full_attention_interval")
                                .value_or(kDefaultFullAttentionInterval);
  if (interval == 0) throw std::runtime_error(p + "full_attention_interval is 0");
  for (uint32_t l = 0; l < s.n_layer; ++l) s.layer_is_recurrent[l] = (l + 1) % interval != 0;
}

// llama.cpp rotates with its interleaved multi-section RoPE, which for text (the same position in
// the first three sections, 0 in the fourth) is NeoX RoPE over the rotated dimensions as long as
// no rotated pair falls in the fourth section.
void check_rope_sections(const gguf::GgufFile& f, const ModelSpec& s) {
  const std::string key = s.arch_name + ".rope.dimension_sections";
  if (!f.find(key)) return;
  const std::vector<int32_t> sec = f.get_array<int32_t>(key);
  if (sec.size() < 3) throw std::runtime_error(key + " has fewer than 3 sections");
  int total = 0;
  for (int32_t x : sec) total += x;
  if (total <= 0) throw std::runtime_error(key + " is empty");
  for (uint32_t pair = 0; pair < s.rope_dims / 2; ++pair) {
    const int sector = static_cast<int>(pair) % total;
    const bool text = (sector % 3 == 0 && sector < 3 * sec[0]) ||
                      (sector % 3 == 1 && sector < 3 * sec[1]) ||
                      (sector % 3 == 2 && sector < 3 * sec[2]);
    if (!text) {
      throw std::runtime_error("qwen35: " + key +
                               " rotates some dimensions by the fourth (non-text) position, "
                               "which is not supported");
    }
  }
}

}  // namespace

void read_qwen35(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  // Multi-token-prediction blocks (nextn_predict_layers) come after the decoder's layers in
  // block_count; like llama.cpp's main pass, the decoder runs without them.
  const uint32_t nextn = f.get_optional<uint32_t>(p + "nextn_predict_layers").value_or(0);
  if (nextn >= s.n_layer) throw std::runtime_error("qwen35: no layers besides the MTP blocks");
  s.n_layer -= nextn;
  s.n_nextn = nextn;
  s.nextn_head = f.get_optional<bool>(p + "nextn_head").value_or(false);
  s.layer_is_swa.resize(s.n_layer);
  s.rope_ordering = RopeOrdering::NeoX;
  s.norm_eps = f.get_optional<float>(p + "attention.layer_norm_rms_epsilon").value_or(1e-6f);
  s.ffn_norm_is_post_attn = true;
  s.attn_output_gate = true;
  s.fused_qkv = false;
  s.qkv_bias = false;
  s.qk_norm = true;
  s.ssm_conv_kernel = required_u32(f, p + "ssm.conv_kernel");
  s.ssm_head_dim = required_u32(f, p + "ssm.state_size");
  s.ssm_n_k_heads = required_u32(f, p + "ssm.group_count");
  s.ssm_n_v_heads = required_u32(f, p + "ssm.time_step_rank");
  const uint32_t inner = required_u32(f, p + "ssm.inner_size");
  if (inner != s.ssm_value_dim()) {
    throw std::runtime_error("qwen35: ssm.inner_size " + std::to_string(inner) +
                             " is not time_step_rank x state_size (value heads as wide as keys)");
  }
  if (s.ssm_n_v_heads % s.ssm_n_k_heads != 0) {
    throw std::runtime_error("qwen35: value heads are not a multiple of the key heads");
  }
  if (s.ssm_conv_kernel < 2 || s.ssm_conv_kernel > kMaxShortConvLength) {
    throw std::runtime_error("qwen35: ssm.conv_kernel " + std::to_string(s.ssm_conv_kernel) +
                             " is outside 2.." + std::to_string(kMaxShortConvLength));
  }
  if (s.ssm_head_dim > kMaxDeltaNetHeadDim || s.ssm_head_dim % 4 != 0) {
    throw std::runtime_error("qwen35: ssm.state_size " + std::to_string(s.ssm_head_dim) +
                             " is not a multiple of 4 up to " +
                             std::to_string(kMaxDeltaNetHeadDim));
  }
  if (s.head_dim != s.head_dim_v) throw std::runtime_error("qwen35: key and value heads differ");
  s.ssm_grouped_heads = s.arch == Arch::Qwen3Next;
  check_rope_sections(f, s);
  read_recurrent_layers(f, s);

  const uint64_t E = s.n_embd, hd = s.head_dim, qd = s.n_embd_q(), kvd = s.n_embd_k_gqa();
  const uint64_t C = s.ssm_conv_channels(), Vd = s.ssm_value_dim(), nv = s.ssm_n_v_heads;
  const std::string& fam = s.arch_name;
  for (uint32_t l = 0; l < s.n_layer; ++l) {
    expect_weight(f, fam, Weight::AttnNorm, l, {E});
    expect_weight(f, fam, Weight::PostAttnNorm, l, {E});
    if (s.is_recurrent(l)) {
      // Older Qwen3-Next files project q|k|v|z interleaved per key head in one ssm_in.
      if (f.find_tensor("blk." + std::to_string(l) + ".ssm_in.weight")) {
        throw std::runtime_error(fam +
                                 ": the fused ssm_in (q|k|v|z) layout of older conversions is not "
                                 "supported (a current convert_hf_to_gguf.py writes attn_qkv and "
                                 "attn_gate)");
      }
      expect_weight(f, fam, Weight::AttnQKV, l, {E, C});
      expect_weight(f, fam, Weight::AttnGate, l, {E, Vd});
      expect_weight(f, fam, Weight::SsmConv1d, l, {s.ssm_conv_kernel, C}, true);
      expect_weight(f, fam, Weight::SsmDt, l, {nv}, true);
      expect_weight(f, fam, Weight::SsmA, l, {nv}, true);
      if (s.ssm_grouped_heads) {
        expect_weight(f, fam, Weight::SsmBetaAlpha, l, {E, 2 * nv});
      } else {
        expect_weight(f, fam, Weight::SsmAlpha, l, {E, nv});
        expect_weight(f, fam, Weight::SsmBeta, l, {E, nv});
      }
      expect_weight(f, fam, Weight::SsmNorm, l, {s.ssm_head_dim}, true);
      expect_weight(f, fam, Weight::SsmOut, l, {Vd, E});
    } else {
      if (f.find_tensor(weight_name(Weight::AttnQKV, l))) {
        throw std::runtime_error(fam + ": a fused attn_qkv on attention layer " +
                                 std::to_string(l) + " is not supported");
      }
      expect_weight(f, fam, Weight::AttnQ, l, {E, 2 * qd});  // Q and its gate, per head
      expect_weight(f, fam, Weight::AttnK, l, {E, kvd});
      expect_weight(f, fam, Weight::AttnV, l, {E, kvd});
      expect_weight(f, fam, Weight::AttnQNorm, l, {hd});
      expect_weight(f, fam, Weight::AttnKNorm, l, {hd});
      expect_weight(f, fam, Weight::AttnOut, l, {qd, E});
    }
  }
  if (s.nextn_head) {
    expect_weight(f, fam, Weight::NextnEhProj, 0, {2 * E, E});
    expect_weight(f, fam, Weight::NextnEnorm, 0, {E});
    expect_weight(f, fam, Weight::NextnHnorm, 0, {E});
  }
}

}  // namespace vkllm::model
