#include "engine/gguf/inline_projector.h"

#include <cmath>
#include <string_view>
#include <utility>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/ollama_layout.h"

namespace vkllm::gguf {

namespace {

// Ollama's names for Gemma 3's SigLIP tower (its converter keeps Hugging Face's, under v. / mm.)
// and llama.cpp's. HF's fc1 widens (n_embd -> n_ff): llama.cpp's ffn_up.
constexpr std::pair<std::string_view, std::string_view> kGemma3Renames[] = {
    {"v.patch_embedding", "v.patch_embd"},
    {"v.position_embedding", "v.position_embd"},
    {"v.post_layernorm", "v.post_ln"},
    {".layer_norm1", ".ln1"},
    {".layer_norm2", ".ln2"},
    {".attn_output", ".attn_out"},
    {".mlp.fc1", ".ffn_up"},
    {".mlp.fc2", ".ffn_down"},
    {"mm.mm_input_projection", "mm.input_projection"},
    {"mm.mm_soft_emb_norm", "mm.soft_emb_norm"},
};

bool is_tower_tensor(std::string_view name) {
  return name.starts_with("v.") || name.starts_with("mm.");
}

std::string renamed(std::string name) {
  for (const auto& [from, to] : gemma3_tower_renames()) {
    if (const size_t at = name.find(from); at != std::string::npos) {
      name.replace(at, from.size(), to);
      break;
    }
  }
  return name;
}

[[noreturn]] void refuse(const std::string& what) {
  throw LayoutError("the vision tower inside this gemma3 file (Ollama's converter's layout) " +
                    what);
}

uint32_t need_u32(const GgufFile& raw, const std::string& key) {
  const auto v = raw.get_optional<uint32_t>(key);
  if (!v || *v == 0) refuse("has no " + key);
  return *v;
}

}  // namespace

std::span<const std::pair<std::string_view, std::string_view>> gemma3_tower_renames() {
  return kGemma3Renames;
}

std::string inline_projector_arch(const GgufFile& raw) {
  const auto arch = raw.get_optional<std::string>("general.architecture");
  if (arch != "gemma3" || !raw.has("gemma3.vision.block_count")) return "";
  for (const TensorInfo& t : raw.tensors())
    if (t.name.starts_with("v.")) return *arch;
  return "";
}

std::vector<uint8_t> extract_inline_projector(const GgufFile& raw, const TensorBytesReader& read) {
  if (inline_projector_arch(raw) != "gemma3")
    refuse("is missing (no gemma3.vision.* keys and v.* tensors)");
  GgufWriter w;
  w.set_string("general.architecture", "clip");
  w.set_string("clip.projector_type", "gemma3");
  w.set_bool("clip.has_vision_encoder", true);
  w.set_bool("clip.use_gelu", true);  // SigLIP's tanh GELU, as llama.cpp's converter notes it
  const std::string from = "gemma3.vision.", to = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "image_size",
                          "patch_size", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, from + key));
  w.set_u32(to + "num_channels", raw.get_optional<uint32_t>(from + "num_channels").value_or(3));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-6f));
  w.set_u32(to + "projection_dim", need_u32(raw, "gemma3.embedding_length"));
  // Ollama writes no normalisation (its Gemma 3 preprocessor used 0.5, as the HF processor).
  w.set_f32s(to + "image_mean", {0.5f, 0.5f, 0.5f});
  w.set_f32s(to + "image_std", {0.5f, 0.5f, 0.5f});
  // The pooling kernel follows from the image tokens: (patches a side / kernel)^2 of them.
  const uint32_t side = need_u32(raw, from + "image_size") / need_u32(raw, from + "patch_size");
  if (const auto tokens = raw.get_optional<uint32_t>("gemma3.mm.tokens_per_image")) {
    const auto per_side = static_cast<uint32_t>(std::lround(std::sqrt(double(*tokens))));
    if (per_side == 0 || per_side * per_side != *tokens || side % per_side != 0)
      refuse("has gemma3.mm.tokens_per_image " + std::to_string(*tokens) + " for " +
             std::to_string(side) + " patches a side");
    w.set_u32(to + "projector.scale_factor", side / per_side);
  }
  for (const TensorInfo& t : raw.tensors()) {
    if (!is_tower_tensor(t.name)) continue;
    const uint64_t offset = t.offset;
    w.add_lazy_tensor(renamed(t.name), t.type, t.shape,
                      [&read, offset](std::span<uint8_t> out) { read(offset, out); });
  }
  return w.serialize();
}

}  // namespace vkllm::gguf
