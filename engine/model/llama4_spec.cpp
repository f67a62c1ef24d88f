#include "engine/model/llama4_spec.h"

#include <stdexcept>
#include <string>

namespace vkllm::model {

void read_llama4(const gguf::GgufFile& f, ModelSpec& s) {
  const std::string p = s.arch_name + ".";
  const uint32_t L = s.n_layer;
  s.rope_ordering = RopeOrdering::Normal;
  s.n_expert = f.get_optional<uint32_t>(p + "expert_count").value_or(0);
  if (s.n_expert == 0) throw std::runtime_error("llama4 model cannot have zero experts");
  const auto step = f.get_optional<uint32_t>(p + "interleave_moe_layer_step");
  if (!step)
    throw std::runtime_error("llama4 model metadata is missing " + p + "interleave_moe_layer_step");
  s.layer_is_moe.assign(L, false);
  for (uint32_t l = 0; l < L; ++l) s.layer_is_moe[l] = *step > 0 && (l + 1) % *step == 0;
  s.moe_gating = MoeGating::Sigmoid;
  s.moe_weight_before_ffn = true;

  // llama.cpp: a sliding_window of 0 turns chunking off and every RoPE layer on but the last.
  const auto window = f.get_optional<uint32_t>(p + "attention.sliding_window");
  const bool chunked = !window || *window != 0;
  const uint32_t nope_step = chunked ? 4 : L;
  s.layer_nope.assign(L, false);
  for (uint32_t l = 0; l < L; ++l) s.layer_nope[l] = (l + 1) % nope_step == 0;
  s.kq_plain_norm = s.n_expert != 128;  // llama.cpp: every type but 17B_128E (Maverick)
  if (!chunked) return;
  s.attn_chunk = f.get_optional<uint32_t>(p + "attention.chunk_size").value_or(8192);
  if (s.attn_chunk == 0) throw std::runtime_error("llama4: attention.chunk_size 0");
  for (uint32_t l = 0; l < L; ++l) s.layer_is_swa[l] = !s.layer_nope[l];
  s.rope_freq_base_swa = f.get_optional<float>(p + "rope.freq_base_swa").value_or(s.rope_freq_base);
  s.rope_freq_scale_swa = s.rope_freq_scale;
  s.attn_temp_scale = 0.1f;
  s.attn_temp_floor = 8192;
  s.attn_temp_offset = 1;
}

}  // namespace vkllm::model
