#include "engine/gguf/inline_projector.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/gguf/quants.h"

namespace vkllm::gguf {

namespace {

using Rename = std::pair<std::string_view, std::string_view>;

// Ollama's names for Gemma 3's SigLIP tower (its converter keeps Hugging Face's, under v. / mm.)
// and llama.cpp's. HF's fc1 widens (n_embd -> n_ff): llama.cpp's ffn_up.
constexpr Rename kGemma3Renames[] = {
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

// Ollama's names for Mistral 3's Pixtral tower and projector (convert_mistral.go's replacements of
// Hugging Face's) and llama.cpp's (clip.cpp's TN_* for PROJECTOR_TYPE_PIXTRAL).
constexpr Rename kMistral3Renames[] = {
    {"v.patch_conv", "v.patch_embd"},
    {"v.encoder_norm", "v.pre_ln"},
    {".attn_output", ".attn_out"},
    {".attn_norm", ".ln1"},
    {".ffn_norm", ".ln2"},
    {"mm.patch_merger.merging_layer", "mm.patch_merger"},
    {"mm.norm", "mm.input_norm"},
    {"mm.linear_1", "mm.1"},
    {"mm.linear_2", "mm.2"},
};

// Ollama's names for Qwen2.5-VL's tower (convert_qwen25vl.go keeps llama.cpp's in the blocks)
// and llama.cpp's: the Conv3D's two frames' kernels and the merger (its RMS norm is llama.cpp's
// post_ln, its MLP mm.0 / mm.2). The second frame's rename comes first: llama.cpp's name for the
// first frame is a prefix of it.
constexpr Rename kQwen25vlRenames[] = {
    {"v.patch_embd_1.weight", "v.patch_embd.weight.1"},
    {"v.patch_embd_0.weight", "v.patch_embd.weight"},
    {"v.merger.ln_q", "v.post_ln"},
    {"v.merger.mlp.0", "mm.0"},
    {"v.merger.mlp.2", "mm.2"},
};

// Ollama's names for Qwen3-VL's tower (its converter keeps Hugging Face's) and llama.cpp's: the
// blocks' norms and MLP, the merger (its LayerNorm is llama.cpp's post_ln, its MLP mm.0 / mm.2),
// then the deepstack mergers' fc1 / fc2 (after the names that hold linear_fc* too), the patch
// bias and positions. Q|K|V (split by Ollama), the Conv3D patch kernel and the deepstack mergers'
// numbering take more than a rename (extract_inline_projector).
constexpr Rename kQwen3vlRenames[] = {
    {".norm1.", ".ln1."},
    {".norm2.", ".ln2."},
    {".mlp.linear_fc1.", ".ffn_up."},
    {".mlp.linear_fc2.", ".ffn_down."},
    {"v.merger.norm.", "v.post_ln."},
    {"v.merger.linear_fc1.", "mm.0."},
    {"v.merger.linear_fc2.", "mm.2."},
    {".linear_fc1.", ".fc1."},
    {".linear_fc2.", ".fc2."},
    {"v.patch_embed.bias", "v.patch_embd.bias"},
    {"v.pos_embed.", "v.position_embd."},
};

// The vision tower's tensors: v.* and mm.*, but not Gemma 4's audio projector (mm.a.*) or the
// clamp bounds Ollama's converter packs into v.clamp_data (add_gemma4_clamps).
bool is_tower_tensor(std::string_view name) {
  return (name.starts_with("v.") || name.starts_with("mm.")) && !name.starts_with("mm.a.") &&
         name != "v.clamp_data";
}

// The architectures whose inline tower extract_inline_projector reads.
bool reads_inline_tower(std::string_view arch) {
  return arch == "gemma3" || arch == "gemma4" || arch == "mistral3" || arch == "qwen25vl" ||
         arch == "qwen3vl";
}

std::string renamed(std::string name, std::span<const Rename> renames) {
  for (const auto& [from, to] : renames) {
    if (const size_t at = name.find(from); at != std::string::npos) {
      name.replace(at, from.size(), to);
      break;
    }
  }
  return name;
}

[[noreturn]] void refuse(std::string_view arch, const std::string& what) {
  throw LayoutError("the vision tower inside this " + std::string(arch) +
                    " file (Ollama's converter's layout) " + what);
}

uint32_t need_u32(const GgufFile& raw, std::string_view arch, const std::string& key) {
  const auto v = raw.get_optional<uint32_t>(key);
  if (!v || *v == 0) refuse(arch, "has no " + key);
  return *v;
}

// SigLIP's sizes and Gemma 3's pooling, as llama.cpp's converter notes them.
void write_gemma3_keys(const GgufFile& raw, GgufWriter& w) {
  constexpr std::string_view arch = "gemma3";
  w.set_string("clip.projector_type", "gemma3");
  w.set_bool("clip.use_gelu", true);  // SigLIP's tanh GELU, as llama.cpp's converter notes it
  const std::string from = "gemma3.vision.", to = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "image_size",
                          "patch_size", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  w.set_u32(to + "num_channels", raw.get_optional<uint32_t>(from + "num_channels").value_or(3));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-6f));
  w.set_u32(to + "projection_dim", need_u32(raw, arch, "gemma3.embedding_length"));
  // Ollama writes no normalisation (its Gemma 3 preprocessor used 0.5, as the HF processor).
  w.set_f32s(to + "image_mean", {0.5f, 0.5f, 0.5f});
  w.set_f32s(to + "image_std", {0.5f, 0.5f, 0.5f});
  // The pooling kernel follows from the image tokens: (patches a side / kernel)^2 of them.
  const uint32_t side =
      need_u32(raw, arch, from + "image_size") / need_u32(raw, arch, from + "patch_size");
  if (const auto tokens = raw.get_optional<uint32_t>("gemma3.mm.tokens_per_image")) {
    const auto per_side = static_cast<uint32_t>(std::lround(std::sqrt(double(*tokens))));
    if (per_side == 0 || per_side * per_side != *tokens || side % per_side != 0)
      refuse(arch, "has gemma3.mm.tokens_per_image " + std::to_string(*tokens) + " for " +
                       std::to_string(side) + " patches a side");
    w.set_u32(to + "projector.scale_factor", side / per_side);
  }
}

// Pixtral's sizes; what Ollama's converter leaves out are llama.cpp's and Ollama's engine's
// defaults (eps 1e-5, CLIP's mean and std, a 2x2 merger). Settings the encoder does not follow
// (another RoPE base or projector activation, heads of another width) are refused.
void write_mistral3_keys(const GgufFile& raw, GgufWriter& w) {
  constexpr std::string_view arch = "mistral3";
  w.set_string("clip.projector_type", "pixtral");
  w.set_bool("clip.use_silu", true);
  const std::string from = "mistral3.vision.", to = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "image_size",
                          "patch_size", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  const uint32_t width = need_u32(raw, arch, from + "embedding_length");
  const uint32_t heads = need_u32(raw, arch, from + "attention.head_count");
  if (const auto key_length = raw.get_optional<uint32_t>(from + "attention.key_length");
      key_length && *key_length * heads != width)
    refuse(arch, "has heads " + std::to_string(*key_length) + " wide in a tower " +
                     std::to_string(width) + " wide with " + std::to_string(heads) + " heads");
  if (const auto base = raw.get_optional<float>(from + "rope.freq_base"); base && *base != 10000.0f)
    refuse(arch, "has a RoPE base of " + std::to_string(*base) + " (Pixtral's, 10000, is read)");
  if (const auto act = raw.get_optional<std::string>("mistral3.mm.projector_hidden_act");
      act && *act != "gelu")
    refuse(arch, "has a " + *act + " projector (Pixtral's GELU one is read)");
  w.set_u32(to + "num_channels", raw.get_optional<uint32_t>(from + "num_channels").value_or(3));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-5f));
  w.set_u32(to + "projection_dim", need_u32(raw, arch, "mistral3.embedding_length"));
  w.set_f32s(to + "image_mean", {0.48145466f, 0.4578275f, 0.40821073f});
  w.set_f32s(to + "image_std", {0.26862954f, 0.26130258f, 0.27577711f});
  w.set_u32(to + "spatial_merge_size",
            raw.get_optional<uint32_t>("mistral3.spatial_merge_size").value_or(2));
}

// Qwen2.5-VL's sizes, as Ollama's llama.cpp compat layer turns them into clip.vision.* (and
// llama.cpp's converter writes them): n_wa_pattern from the full-attention layers (every n-th),
// the FFN width from ffn_up, the 560 px / CLIP mean and std the converter notes. Settings the
// encoder does not follow (another RoPE base, window or temporal patch) are refused.
void write_qwen25vl_keys(const GgufFile& raw, GgufWriter& w) {
  constexpr std::string_view arch = "qwen25vl";
  w.set_string("clip.projector_type", "qwen2.5vl_merger");
  w.set_bool("clip.use_silu", true);
  const std::string from = "qwen25vl.vision.", to = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "patch_size", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  const TensorInfo* up = raw.find_tensor("v.blk.0.ffn_up.weight");
  if (!up || up->shape.size() != 2) refuse(arch, "has no v.blk.0.ffn_up.weight");
  w.set_u32(to + "feed_forward_length", static_cast<uint32_t>(up->shape[1]));
  w.set_u32(to + "image_size", 560);
  w.set_u32(to + "num_channels", raw.get_optional<uint32_t>(from + "num_channels").value_or(3));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-6f));
  w.set_u32(to + "projection_dim", need_u32(raw, arch, "qwen25vl.embedding_length"));
  w.set_f32s(to + "image_mean", {0.48145466f, 0.4578275f, 0.40821073f});
  w.set_f32s(to + "image_std", {0.26862954f, 0.26130258f, 0.27577711f});
  w.set_u32(to + "spatial_merge_size",
            raw.get_optional<uint32_t>(from + "spatial_merge_size").value_or(2));
  if (const auto base = raw.get_optional<float>(from + "rope.freq_base"); base && *base != 10000.0f)
    refuse(arch, "has a RoPE base of " + std::to_string(*base) + " (10000 is read)");
  if (const auto win = raw.get_optional<uint32_t>(from + "window_size"); win && *win != 112)
    refuse(arch, "has a " + std::to_string(*win) + " px attention window (112 is read)");
  if (const auto t = raw.get_optional<uint32_t>(from + "temporal_patch_size"); t && *t != 2)
    refuse(arch, "has a temporal patch of " + std::to_string(*t) + " frames (2 are read)");
  uint32_t pattern = 8;  // Qwen2.5-VL's [7, 15, 23, 31], as Ollama's compat layer assumes
  if (raw.find(from + "fullatt_block_indexes")) {
    const std::vector<int32_t> full = raw.get_array<int32_t>(from + "fullatt_block_indexes");
    if (full.empty() || full[0] < 0) refuse(arch, "has no full-attention layers");
    pattern = static_cast<uint32_t>(full[0]) + 1;
    for (size_t i = 1; i < full.size(); ++i)
      if (full[i] - full[i - 1] != static_cast<int32_t>(pattern))
        refuse(arch, "has full-attention layers at an uneven spacing (every " +
                         std::to_string(pattern) + " layers is read)");
  }
  w.set_u32(to + "n_wa_pattern", pattern);
}

// Qwen3-VL's sizes, as llama.cpp's converter writes them: the FFN width from ffn_up, the image
// size from the learned positions (their square's side in patches), the deepstack layers from the
// tensors (llama.cpp reads them so). Another RoPE base or temporal patch is refused.
void write_qwen3vl_keys(const GgufFile& raw, GgufWriter& w) {
  constexpr std::string_view arch = "qwen3vl";
  w.set_string("clip.projector_type", "qwen3vl_merger");
  w.set_bool("clip.use_gelu", true);
  const std::string from = "qwen3vl.vision.", to = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "patch_size", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  const TensorInfo* up = raw.find_tensor("v.blk.0.mlp.linear_fc1.weight");
  if (!up || up->shape.size() != 2) refuse(arch, "has no v.blk.0.mlp.linear_fc1.weight");
  w.set_u32(to + "feed_forward_length", static_cast<uint32_t>(up->shape[1]));
  const TensorInfo* pos = raw.find_tensor("v.pos_embed.weight");
  const auto side = pos && pos->shape.size() == 2
                        ? static_cast<uint32_t>(std::lround(std::sqrt(double(pos->shape[1]))))
                        : 0u;
  if (side == 0 || uint64_t{side} * side != pos->shape[1])
    refuse(arch, "has no v.pos_embed.weight for a square of patches");
  w.set_u32(to + "image_size", side * need_u32(raw, arch, from + "patch_size"));
  w.set_u32(to + "num_channels", raw.get_optional<uint32_t>(from + "num_channels").value_or(3));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-6f));
  w.set_u32(to + "projection_dim", need_u32(raw, arch, "qwen3vl.embedding_length"));
  for (const char* key : {"image_mean", "image_std"}) {
    std::vector<float> v{0.5f, 0.5f, 0.5f};  // Qwen3-VL's preprocessor config
    if (raw.find(from + key)) v = raw.get_array<float>(from + key);
    if (v.size() != 3) refuse(arch, "has a " + from + key + " of " + std::to_string(v.size()));
    w.set_f32s(to + key, v);
  }
  w.set_u32(to + "spatial_merge_size",
            raw.get_optional<uint32_t>(from + "spatial_merge_size").value_or(2));
  if (const auto base = raw.get_optional<float>(from + "rope.freq_base"); base && *base != 10000.0f)
    refuse(arch, "has a RoPE base of " + std::to_string(*base) + " (10000 is read)");
  if (const auto t = raw.get_optional<uint32_t>(from + "temporal_patch_size"); t && *t != 2)
    refuse(arch, "has a temporal patch of " + std::to_string(*t) + " frames (2 are read)");
}

// Gemma 4's sizes, as Ollama's layer turns gemma4.vision.* into clip.vision.* (handle_gemma4_clip)
// and llama.cpp's converter writes them: its placeholder image size 224, normalisation by mean 0
// and std 1 (the tower standardises with v.std_bias / v.std_scale), the pooling kernel (3 unless
// the file says). Another number of channels is refused.
void write_gemma4_keys(const GgufFile& raw, GgufWriter& w) {
  constexpr std::string_view arch = "gemma4";
  w.set_string("clip.projector_type", "gemma4v");
  const std::string from = "gemma4.vision.", to = "clip.vision.";
  w.set_u32(to + "image_size", 224);
  for (const char* key : {"patch_size", "embedding_length", "feed_forward_length"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  w.set_u32(to + "projection_dim", need_u32(raw, arch, "gemma4.embedding_length"));
  for (const char* key : {"block_count", "attention.head_count"})
    w.set_u32(to + key, need_u32(raw, arch, from + key));
  w.set_f32(to + "attention.layer_norm_epsilon",
            raw.get_optional<float>(from + "attention.layer_norm_epsilon").value_or(1e-6f));
  w.set_f32s(to + "image_mean", {0.0f, 0.0f, 0.0f});
  w.set_f32s(to + "image_std", {1.0f, 1.0f, 1.0f});
  w.set_u32(to + "projector.scale_factor",
            raw.get_optional<uint32_t>(from + "projector.scale_factor").value_or(3));
  if (const auto c = raw.get_optional<uint32_t>(from + "num_channels"); c && *c != 3)
    refuse(arch, "has " + std::to_string(*c) + " image channels (3 are read)");
}

// Gemma 4's clamp bounds. llama.cpp's mmproj (and Ollama's current converter) gives each linear
// layer's as four F32 scalars (<layer>.input_min, .input_max, .output_min, .output_max); Ollama's
// converter also packs them all into v.clamp_data (per tower layer attn_q, attn_k, attn_v,
// attn_out, ffn_gate, ffn_up, ffn_down, then mm.input_projection; four values each), which older
// files carry alone. Adds, from the packed tensor, the scalars of every layer the file has none
// for. Four zeros are the converter's fill for a layer without bounds (they would clamp every
// value to 0), so they add none.
void add_gemma4_clamps(const GgufFile& raw, const TensorBytesReader& read, GgufWriter& w) {
  constexpr std::string_view arch = "gemma4";
  const TensorInfo* packed = raw.find_tensor("v.clamp_data");
  if (!packed) return;
  constexpr const char* kLinears[] = {"attn_q",   "attn_k", "attn_v",  "attn_out",
                                      "ffn_gate", "ffn_up", "ffn_down"};
  constexpr const char* kBounds[] = {".input_min", ".input_max", ".output_min", ".output_max"};
  const uint64_t layers = need_u32(raw, arch, "gemma4.vision.block_count");
  const uint64_t n = (layers * std::size(kLinears) + 1) * 4;
  if (packed->type != TensorType::F32 || packed->element_count() != n)
    refuse(arch, "has a v.clamp_data of " + std::to_string(packed->element_count()) +
                     " values, not " + std::to_string(n) + " F32 ones for " +
                     std::to_string(layers) + " layers");
  std::vector<float> values(n);
  read(packed->offset, std::span(reinterpret_cast<uint8_t*>(values.data()), n * sizeof(float)));
  auto add = [&](const std::string& base, uint64_t at) {
    for (const char* bound : kBounds)
      if (raw.find_tensor(base + bound)) return;  // the file's own scalars
    if (std::all_of(&values[at], &values[at + 4], [](float v) { return v == 0.0f; })) return;
    for (uint64_t i = 0; i < 4; ++i) {
      std::vector<uint8_t> bytes(sizeof(float));
      std::memcpy(bytes.data(), &values[at + i], sizeof(float));
      w.add_tensor(base + kBounds[i], TensorType::F32, {1}, std::move(bytes));
    }
  };
  for (uint64_t l = 0; l < layers; ++l)
    for (size_t k = 0; k < std::size(kLinears); ++k)
      add("v.blk." + std::to_string(l) + "." + kLinears[k], (l * std::size(kLinears) + k) * 4);
  add("mm.input_projection", n - 4);
}

// Qwen3-VL's tower tensors that are not a rename: Ollama's one Conv3D kernel [3 n_embd, 2,
// patch, patch] as llama.cpp's two frames' kernels, Q, K and V (and their biases) as one
// attn_qkv, the deepstack mergers by their layer (vision.deepstack_visual_indexes) rather than
// their index. Returns false for a tensor the renames take as it is.
bool add_qwen3vl_tensor(const GgufFile& raw, const TensorInfo& t, const TensorBytesReader& read,
                        GgufWriter& w) {
  constexpr std::string_view arch = "qwen3vl";
  if (t.name == "v.patch_embed.weight") {
    if (t.shape.size() != 4 || t.shape[2] != 2)
      refuse(arch, "has a v.patch_embed.weight that is no Conv3D kernel of 2 frames");
    const uint64_t rows = t.shape[3], kernel = quantized_size(t.type, t.shape[0] * t.shape[1]);
    const uint64_t offset = t.offset;
    for (uint32_t frame = 0; frame < 2; ++frame) {
      w.add_lazy_tensor(frame ? "v.patch_embd.weight.1" : "v.patch_embd.weight", t.type,
                        {t.shape[0], t.shape[1], 3, rows / 3},
                        [&read, offset, rows, kernel, frame](std::span<uint8_t> out) {
                          std::vector<uint8_t> both(2 * rows * kernel);
                          read(offset, both);
                          for (uint64_t r = 0; r < rows; ++r)
                            std::memcpy(out.data() + r * kernel,
                                        both.data() + (2 * r + frame) * kernel, kernel);
                        });
    }
    return true;
  }
  if (t.name.find(".attn_k.") != std::string::npos || t.name.find(".attn_v.") != std::string::npos)
    return true;  // with attn_q's
  if (const size_t at = t.name.find(".attn_q."); at != std::string::npos) {
    std::vector<uint64_t> offsets;
    for (const char* part : {".attn_q.", ".attn_k.", ".attn_v."}) {
      std::string name = t.name;
      name.replace(at, 8, part);
      const TensorInfo* p = raw.find_tensor(name);
      if (!p || p->type != t.type || p->shape != t.shape)
        refuse(arch, "has no " + name + " like " + t.name);
      offsets.push_back(p->offset);
    }
    std::vector<uint64_t> shape = t.shape;
    shape.back() *= 3;
    std::string name = t.name;
    name.replace(at, 8, ".attn_qkv.");
    w.add_lazy_tensor(std::move(name), t.type, std::move(shape),
                      [&read, offsets](std::span<uint8_t> out) {
                        const size_t third = out.size() / 3;
                        for (size_t i = 0; i < 3; ++i)
                          read(offsets[i], out.subspan(i * third, third));
                      });
    return true;
  }
  if (t.name.starts_with("v.deepstack_merger.")) {
    const size_t dot = t.name.find('.', 19);
    const std::vector<int32_t> layers =
        raw.find("qwen3vl.vision.deepstack_visual_indexes")
            ? raw.get_array<int32_t>("qwen3vl.vision.deepstack_visual_indexes")
            : std::vector<int32_t>{};
    const size_t i = std::stoul(t.name.substr(19, dot - 19));
    if (i >= layers.size() || layers[i] < 0)
      refuse(arch, "has " + t.name + " but no layer for it in vision.deepstack_visual_indexes");
    const uint64_t offset = t.offset;
    w.add_lazy_tensor(
        renamed("v.deepstack." + std::to_string(layers[i]) + t.name.substr(dot), kQwen3vlRenames),
        t.type, t.shape, [&read, offset](std::span<uint8_t> out) { read(offset, out); });
    return true;
  }
  return false;
}

// llama.cpp's converter copies the [IMG_BREAK] token's row of the text embeddings into the
// mmproj (F32); Ollama's file has only the text model's, possibly quantized row.
void add_img_break(const GgufFile& raw, const TensorBytesReader& read, GgufWriter& w) {
  constexpr std::string_view arch = "mistral3";
  const TensorInfo* embd = raw.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2 || !can_dequantize(embd->type))
    refuse(arch, "has no token_embd.weight to take the [IMG_BREAK] embedding from");
  const uint32_t token = img_break_token(raw.find("tokenizer.ggml.tokens"));
  if (token >= embd->shape[1])
    refuse(arch, "has no embedding row for [IMG_BREAK] (token " + std::to_string(token) + ")");
  const uint64_t n = embd->shape[0];
  const size_t row_bytes = quantized_size(embd->type, n);
  const uint64_t offset = embd->offset + token * row_bytes;
  const TensorType type = embd->type;
  w.add_lazy_tensor("v.token_embd.img_break", TensorType::F32, {n},
                    [&read, offset, type, n, row_bytes](std::span<uint8_t> out) {
                      std::vector<uint8_t> row(row_bytes);
                      read(offset, row);
                      std::vector<float> values(n);
                      dequantize(type, row.data(), values.data(), n);
                      std::memcpy(out.data(), values.data(), out.size());
                    });
}

bool is_rope_projection(std::string_view name) {
  return name.find(".attn_q.") != std::string_view::npos ||
         name.find(".attn_k.") != std::string_view::npos;
}

}  // namespace

std::span<const std::pair<std::string_view, std::string_view>> inline_tower_renames(
    std::string_view arch) {
  if (arch == "gemma3") return kGemma3Renames;
  if (arch == "mistral3") return kMistral3Renames;
  if (arch == "qwen25vl") return kQwen25vlRenames;
  if (arch == "qwen3vl") return kQwen3vlRenames;
  return {};
}

void permute_rope_rows(std::span<const uint8_t> in, std::span<uint8_t> out, uint64_t rows,
                       uint32_t n_head, bool to_hf) {
  if (rows == 0 || n_head == 0 || rows % (2ull * n_head) != 0 || in.size() != out.size() ||
      in.size() % rows != 0)
    throw LayoutError("vision Q/K of " + std::to_string(rows) + " rows cannot be split into " +
                      std::to_string(n_head) + " heads of rotary pairs");
  const uint64_t row_bytes = in.size() / rows, head = rows / n_head, half = head / 2;
  for (uint64_t r = 0; r < rows; ++r) {
    // Row r of llama.cpp's order is pair element (r % 2) of pair (r % head) / 2 in its head; in
    // Hugging Face's it sits in half (r % 2) at that pair's index.
    const uint64_t h = r / head, pair = (r % head) / 2, which = r % 2;
    const uint64_t hf = h * head + which * half + pair;
    const uint64_t src = to_hf ? r : hf, dst = to_hf ? hf : r;
    std::memcpy(out.data() + dst * row_bytes, in.data() + src * row_bytes, row_bytes);
  }
}

uint32_t img_break_token(const Value* tokens) {
  const auto* list = tokens ? std::get_if<std::shared_ptr<Array>>(&tokens->v) : nullptr;
  if (list && *list) {
    for (size_t i = 0; i < (*list)->items.size(); ++i) {
      const auto* s = std::get_if<std::string>(&(*list)->items[i].v);
      if (s && *s == "[IMG_BREAK]") return static_cast<uint32_t>(i);
    }
  }
  return 12;
}

std::string inline_projector_arch(const GgufFile& raw) {
  const auto arch = raw.get_optional<std::string>("general.architecture");
  if (!arch || !reads_inline_tower(*arch) || !raw.has(*arch + ".vision.block_count")) return "";
  for (const TensorInfo& t : raw.tensors())
    if (t.name.starts_with("v.")) return *arch;
  return "";
}

std::vector<uint8_t> extract_inline_projector(const GgufFile& raw, const TensorBytesReader& read) {
  const std::string arch = inline_projector_arch(raw);
  if (arch.empty()) {
    const std::string named = raw.get_optional<std::string>("general.architecture").value_or("");
    refuse(named, "is missing (no " + named + ".vision.* keys and v.* tensors)");
  }
  GgufWriter w;
  w.set_string("general.architecture", "clip");
  w.set_bool("clip.has_vision_encoder", true);
  const bool pixtral = arch == "mistral3";
  if (pixtral) {
    write_mistral3_keys(raw, w);
  } else if (arch == "qwen25vl") {
    write_qwen25vl_keys(raw, w);
  } else if (arch == "qwen3vl") {
    write_qwen3vl_keys(raw, w);
  } else if (arch == "gemma4") {
    write_gemma4_keys(raw, w);
  } else {
    write_gemma3_keys(raw, w);
  }
  const uint32_t heads =
      raw.get_optional<uint32_t>(arch + ".vision.attention.head_count").value_or(0);
  for (const TensorInfo& t : raw.tensors()) {
    if (!is_tower_tensor(t.name)) continue;
    if (arch == "qwen3vl" && add_qwen3vl_tensor(raw, t, read, w)) continue;
    const uint64_t offset = t.offset;
    if (pixtral && !t.shape.empty() && t.name.starts_with("v.blk.") && is_rope_projection(t.name)) {
      const uint64_t rows = t.shape.back();
      if (heads == 0 || rows % (2ull * heads) != 0)
        refuse(arch, "has " + t.name + " of " + std::to_string(rows) + " rows for " +
                         std::to_string(heads) + " heads");
      w.add_lazy_tensor(renamed(t.name, kMistral3Renames), t.type, t.shape,
                        [&read, offset, rows, heads](std::span<uint8_t> out) {
                          std::vector<uint8_t> hf(out.size());
                          read(offset, hf);
                          permute_rope_rows(hf, out, rows, heads, false);
                        });
      continue;
    }
    w.add_lazy_tensor(renamed(t.name, inline_tower_renames(arch)), t.type, t.shape,
                      [&read, offset](std::span<uint8_t> out) { read(offset, out); });
  }
  if (pixtral) add_img_break(raw, read, w);
  if (arch == "gemma4") add_gemma4_clamps(raw, read, w);
  return w.serialize();
}

}  // namespace vkllm::gguf
