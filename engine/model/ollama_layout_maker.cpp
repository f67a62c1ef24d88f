#include "engine/model/ollama_layout_maker.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/gguf/inline_projector.h"
#include "engine/gguf/quants.h"
#include "engine/model/model_maker.h"
#include "engine/model/projector_maker.h"

namespace vkllm::model {

namespace {

constexpr uint32_t kLlama3EndOfText = 128001, kLlama3EndOfTurn = 128009;

// Llama 3 Instruct's turn format (header, blank line, content, <|eot_id|>), as a Jinja template.
constexpr const char* kLlama3ChatTemplate =
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>"
    "\n\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

const gguf::Array* array_of(const gguf::GgufWriter& w, std::string_view key) {
  const gguf::Value* v = w.find(key);
  const auto* a = v ? std::get_if<std::shared_ptr<gguf::Array>>(&v->v) : nullptr;
  return a ? a->get() : nullptr;
}

void rewrite_llama(gguf::GgufWriter& w) {
  const gguf::Array* tokens = array_of(w, "tokenizer.ggml.tokens");
  const auto* eot = tokens && tokens->items.size() > kLlama3EndOfTurn
                        ? std::get_if<std::string>(&tokens->items[kLlama3EndOfTurn].v)
                        : nullptr;
  if (!eot || *eot != "<|eot_id|>") {
    throw std::invalid_argument(
        "make-model --layout ollama: llama needs the Llama 3 vocabulary (<|eot_id|> at 128009; "
        "vkllm dev make-vocab writes it)");
  }
  w.erase("tokenizer.ggml.pre");
  w.erase("tokenizer.ggml.add_bos_token");
  w.erase("tokenizer.ggml.eot_token_id");
  w.set_u32("tokenizer.ggml.eos_token_id", kLlama3EndOfText);
  if (!w.find("tokenizer.chat_template")) {
    w.set_string("tokenizer.chat_template", kLlama3ChatTemplate);
  }
}

// Appends `extra` control tokens to the tokenizer's per-token arrays that the file has.
void append_multimodal_tokens(gguf::GgufWriter& w, const std::vector<std::string>& extra) {
  const gguf::Array* tokens = array_of(w, "tokenizer.ggml.tokens");
  if (!tokens) throw std::invalid_argument("make-model: the vocab has no tokenizer.ggml.tokens");
  auto grow = [&](const char* key, const gguf::Value& fill) {
    const gguf::Array* a = array_of(w, key);
    if (!a) return;
    auto longer = std::make_shared<gguf::Array>(*a);
    for (const auto& t : extra) {
      longer->items.push_back(key == std::string_view("tokenizer.ggml.tokens") ? gguf::Value{t}
                                                                               : fill);
    }
    w.set(key, gguf::Value{std::move(longer)});
  };
  grow("tokenizer.ggml.scores", gguf::Value{0.0f});
  grow("tokenizer.ggml.token_type", gguf::Value{int32_t{3}});  // control
  grow("tokenizer.ggml.tokens", gguf::Value{std::string()});
}

// The random mmproj `--projector` writes beside the llama.cpp-layout twin of the model in `w`
// (same shape, seed and bytes), parsed.
struct TwinProjector {
  std::vector<uint8_t> bytes;
  gguf::GgufFile file;
};

TwinProjector twin_projector(const MakeModelOptions& o, const gguf::GgufWriter& w) {
  MakeProjectorOptions po;
  po.arch = o.arch;
  po.shape = parse_projector_shape(o.projector_shape, o.arch);
  po.text_embd = o.shape.n_embd;
  po.f32 = o.file_type == FileType::F32;
  po.seed = o.seed;
  if (o.arch == "mistral3") po.img_break = img_break_embedding(w);
  if (o.arch == "qwen3vl") po.n_deepstack = qwen3vl_deepstack_layers(o.shape.n_layer);
  gguf::GgufWriter projector;
  build_random_projector(po, projector);
  std::vector<uint8_t> bytes = projector.serialize();
  gguf::GgufFile file = gguf::GgufFile::parse(bytes, gguf::ReadLayout::Raw);
  return {std::move(bytes), std::move(file)};
}

// The twin's tower tensors under Ollama's names (gguf::inline_tower_renames backwards). Pixtral's
// Q/K go back to Hugging Face's row order, and its [IMG_BREAK] row stays in the text embeddings
// only, as Ollama's converter leaves them.
void embed_tower_tensors(const MakeModelOptions& o, const TwinProjector& twin,
                         gguf::GgufWriter& w) {
  const uint32_t heads = twin.file.get<uint32_t>("clip.vision.attention.head_count");
  // Ollama publishes Qwen2.5-VL as qwen25vl.
  const std::string ollama_arch = o.arch == "qwen2vl" ? "qwen25vl" : o.arch;
  for (const gguf::TensorInfo& t : twin.file.tensors()) {
    if (t.name == "v.token_embd.img_break") continue;
    std::string name = t.name;
    for (const auto& [ollama, llama_cpp] : gguf::inline_tower_renames(ollama_arch)) {
      if (const size_t at = name.find(llama_cpp); at != std::string::npos) {
        name.replace(at, llama_cpp.size(), ollama);
        break;
      }
    }
    const auto data = twin.file.tensor_data(t);
    std::vector<uint8_t> bytes(data.begin(), data.end());
    if (o.arch == "mistral3" &&
        (t.name.ends_with(".attn_q.weight") || t.name.ends_with(".attn_k.weight"))) {
      gguf::permute_rope_rows(data, bytes, t.shape.back(), heads, true);
    }
    w.add_tensor(std::move(name), t.type, t.shape, std::move(bytes));
  }
}

// The tower and projector Ollama's converter keeps in a multimodal gemma3 file, under
// gemma3.vision.* / gemma3.mm.* keys and Ollama's tensor names.
void embed_gemma3_tower(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const TwinProjector twin = twin_projector(o, w);
  const gguf::GgufFile& mmproj = twin.file;
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length", "image_size",
                          "patch_size", "attention.head_count"})
    w.set_u32(std::string("gemma3.vision.") + key,
              mmproj.get<uint32_t>(std::string("clip.vision.") + key));
  w.set_u32("gemma3.vision.num_channels", 3);
  w.set_f32("gemma3.vision.attention.layer_norm_epsilon",
            mmproj.get<float>("clip.vision.attention.layer_norm_epsilon"));
  const ProjectorShape shape = parse_projector_shape(o.projector_shape);
  const uint32_t side = shape.image_size / shape.patch_size / shape.n_merge;
  w.set_u32("gemma3.mm.tokens_per_image", side * side);
  embed_tower_tensors(o, twin, w);
}

void rewrite_gemma3(const MakeModelOptions& o, gguf::GgufWriter& w) {
  if (o.shape.rope_freq_base > 0 && o.shape.rope_freq_base != 1000000.0f) {
    throw std::invalid_argument(
        "make-model --layout ollama: Ollama's gemma3 layout stores no rope base, so the model "
        "must use gemma3's 1e6");
  }
  for (const char* key :
       {"gemma3.attention.layer_norm_rms_epsilon", "gemma3.rope.freq_base", "gemma3.vocab_size",
        "gemma3.rope.scaling.type", "gemma3.rope.scaling.factor", "tokenizer.chat_template"}) {
    w.erase(key);
  }
  w.set_bool("tokenizer.ggml.add_padding_token", false);
  w.set_bool("tokenizer.ggml.add_unknown_token", false);
  std::vector<std::string> extra{"<image_soft_token>"};
  for (int i = 1; i < 8; ++i) extra.push_back("<mm_reserved_" + std::to_string(i) + ">");
  append_multimodal_tokens(w, extra);
  embed_gemma3_tower(o, w);
}

// Moves a key to another name (at the end of the key order), if it is set.
void move_key(gguf::GgufWriter& w, const std::string& from, const std::string& to) {
  const gguf::Value* v = w.find(from);
  if (!v) return;
  gguf::Value value = *v;
  w.erase(from);
  w.set(to, std::move(value));
}

void rewrite_gemma_embedding(const MakeModelOptions& o, gguf::GgufWriter& w) {
  for (const std::string& key : w.keys()) {
    if (key.starts_with("gemma-embedding.")) {
      move_key(w, key, "gemma3." + key.substr(std::string_view("gemma-embedding.").size()));
    }
  }
  w.set_string("general.architecture", "gemma3");
  for (const char* key :
       {"gemma3.dense_2_feat_in", "gemma3.dense_2_feat_out", "gemma3.dense_3_feat_in",
        "gemma3.dense_3_feat_out", "gemma3.vocab_size"}) {
    w.erase(key);
  }
  // Ollama's Gemma 3 converter writes the local layers' base and the window pattern per layer.
  w.set_f32("gemma3.rope.local.freq_base", 10000.0f);
  auto pattern = std::make_shared<gguf::Array>();
  pattern->element_type = gguf::ValueType::BOOL;
  for (uint32_t l = 0; l < o.shape.n_layer; ++l) pattern->items.push_back(gguf::Value{l % 6 < 5});
  w.set("gemma3.attention.sliding_window_pattern", gguf::Value{std::move(pattern)});
  w.rename_tensor("dense_2.weight", "dense.0.weight");
  w.rename_tensor("dense_3.weight", "dense.1.weight");
}

// The Pixtral tower and projector in a Mistral 3 file as Ollama's converter writes it
// (convert_mistral.go): mistral3.vision.* keys (no eps or normalisation: the defaults), the merge
// size and image token, and the twin's tensors under Ollama's names.
void embed_mistral3_tower(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const TwinProjector twin = twin_projector(o, w);
  const gguf::GgufFile& mmproj = twin.file;
  const std::string p = "mistral3.";
  for (const char* key : {"block_count", "embedding_length", "feed_forward_length",
                          "attention.head_count", "image_size", "patch_size"})
    w.set_u32(p + "vision." + key, mmproj.get<uint32_t>(std::string("clip.vision.") + key));
  w.set_u32(p + "vision.num_channels", 3);
  w.set_u32(p + "vision.attention.key_length",
            mmproj.get<uint32_t>("clip.vision.embedding_length") /
                mmproj.get<uint32_t>("clip.vision.attention.head_count"));
  w.set_f32(p + "vision.rope.freq_base", 10000.0f);
  w.set_u32(p + "image_token_index", 10);
  w.set_u32(p + "spatial_merge_size", mmproj.get<uint32_t>("clip.vision.spatial_merge_size"));
  w.set_bool(p + "mm.projector_bias", false);
  w.set_string(p + "mm.projector_hidden_act", "gelu");
  embed_tower_tensors(o, twin, w);
}

void rewrite_mistral3(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const std::string p = "mistral3.";
  move_key(w, p + "rope.scaling.yarn_beta_fast", p + "rope.scaling.beta_fast");
  move_key(w, p + "rope.scaling.yarn_beta_slow", p + "rope.scaling.beta_slow");
  if (const gguf::Value* m = w.find(p + "rope.scaling.yarn_log_multiplier")) {
    w.set(p + "rope.scaling.mscale", *m);
  }
  move_key(w, p + "rope.scaling.yarn_log_multiplier", p + "rope.scaling.mscale_all_dim");
  move_key(w, p + "attention.temperature_scale", p + "rope.scaling_beta");
  w.erase("tokenizer.ggml.pre");
  embed_mistral3_tower(o, w);
}

// snowflake-arctic-embed2 as published: its XLM-R tokenizer's precompiled charsmap as base64
// text, one character per string.
void rewrite_snowflake_arctic_embed2(gguf::GgufWriter& w) {
  const gguf::Value* model = w.find("tokenizer.ggml.model");
  const auto* name = model ? std::get_if<std::string>(&model->v) : nullptr;
  const gguf::Array* charsmap = array_of(w, "tokenizer.ggml.precompiled_charsmap");
  if (!name || *name != "t5" || !charsmap) {
    throw std::invalid_argument(
        "make-model --layout ollama: bert's Ollama layout is snowflake-arctic-embed2's, which "
        "needs an XLM-R vocabulary (tokenizer.ggml.model t5 with a precompiled charsmap, e.g. "
        "tests/reference/unigram/xlmr-unigram-vocab.gguf); Ollama's converter writes WordPiece "
        "bert models as llama.cpp's does");
  }
  std::string bytes;
  bytes.reserve(charsmap->items.size());
  for (const gguf::Value& item : charsmap->items) {
    if (const auto* u = std::get_if<uint8_t>(&item.v)) {
      bytes.push_back(static_cast<char>(*u));
    } else if (const auto* i = std::get_if<int8_t>(&item.v)) {
      bytes.push_back(static_cast<char>(*i));
    } else {
      throw std::invalid_argument("make-model: the vocab's precompiled charsmap is not bytes");
    }
  }
  std::string text(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  text.resize(static_cast<size_t>(n));
  std::vector<std::string> chars;
  chars.reserve(text.size());
  for (char c : text) chars.emplace_back(1, c);
  w.set_strings("tokenizer.ggml.precompiled_charsmap", chars);
}

// Qwen2.5-VL as Ollama's converter writes it (convert_qwen25vl.go): its qwen2 converter's keys
// under qwen25vl. (no vocab_size), the HF config's three RoPE sections as rope.mrope_section, and
// the twin's --projector tower embedded under qwen25vl.vision.* keys and Ollama's names (the text
// view hides it).
void rewrite_qwen2vl(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const std::string from = "qwen2vl.", to = "qwen25vl.";
  std::vector<int32_t> sections;
  if (const gguf::Array* a = array_of(w, from + "rope.dimension_sections"))
    for (const gguf::Value& v : a->items) sections.push_back(std::get<int32_t>(v.v));
  sections.resize(3);
  w.erase(from + "rope.dimension_sections");
  w.erase(from + "vocab_size");
  w.set_string("general.architecture", "qwen25vl");
  for (const std::string& key : w.keys())
    if (key.starts_with(from)) move_key(w, key, to + key.substr(from.size()));
  w.set_i32s(to + "rope.mrope_section", sections);
  const TwinProjector twin = twin_projector(o, w);
  const gguf::GgufFile& mmproj = twin.file;
  for (const char* key : {"block_count", "embedding_length", "attention.head_count", "patch_size",
                          "spatial_merge_size"})
    w.set_u32(to + "vision." + key, mmproj.get<uint32_t>(std::string("clip.vision.") + key));
  w.set_u32(to + "vision.num_channels", 3);
  w.set_u32(to + "vision.window_size", 112);
  w.set_u32(to + "vision.temporal_patch_size", 2);
  w.set_f32(to + "vision.attention.layer_norm_epsilon", 1e-6f);
  w.set_f32(to + "vision.rope.freq_base", 10000.0f);
  const uint32_t layers = mmproj.get<uint32_t>("clip.vision.block_count");
  const uint32_t pattern = mmproj.get<uint32_t>("clip.vision.n_wa_pattern");
  std::vector<int32_t> full;
  for (uint32_t l = pattern - 1; l < layers; l += pattern) full.push_back(static_cast<int32_t>(l));
  w.set_i32s(to + "vision.fullatt_block_indexes", full);
  embed_tower_tensors(o, twin, w);
}

// Qwen3-VL's tower as Ollama's converter (before its projector layer) embeds it: the twin's
// tensors under the Hugging Face names it keeps (gguf::inline_tower_renames backwards: norm1,
// mlp.linear_fc1, merger.*, pos_embed; deepstack_merger.<i>.*), Q|K|V split in three, the two
// frames' patch kernels as the one Conv3D kernel [3 n_embd, 2, patch, patch] (its first two
// dimensions merged).
void embed_qwen3vl_tower(const TwinProjector& twin, const std::vector<int32_t>& deepstack,
                         gguf::GgufWriter& w) {
  const gguf::GgufFile& f = twin.file;
  auto bytes_of = [&](const gguf::TensorInfo& t) {
    const auto d = f.tensor_data(t);
    return std::vector<uint8_t>(d.begin(), d.end());
  };
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::string name = t.name;
    if (name.starts_with("v.patch_embd.weight")) {
      if (name != "v.patch_embd.weight") continue;  // both frames at the first
      const gguf::TensorInfo& second = *f.find_tensor("v.patch_embd.weight.1");
      const uint64_t P = t.shape[0], rows = t.shape[2] * t.shape[3];  // 3 x n_embd
      const uint64_t kernel = gguf::quantized_size(t.type, P * P);    // F16 or F32
      const auto a = f.tensor_data(t), b = f.tensor_data(second);
      std::vector<uint8_t> merged(2 * rows * kernel);
      for (uint64_t r = 0; r < rows; ++r) {
        std::memcpy(&merged[(2 * r) * kernel], &a[r * kernel], kernel);
        std::memcpy(&merged[(2 * r + 1) * kernel], &b[r * kernel], kernel);
      }
      w.add_tensor("v.patch_embed.weight", t.type, {P, P, 2, rows}, std::move(merged));
      continue;
    }
    if (const size_t at = name.find(".attn_qkv."); at != std::string::npos) {
      const std::vector<uint8_t> all = bytes_of(t);
      const uint64_t third = all.size() / 3;
      std::vector<uint64_t> shape = t.shape;
      shape.back() /= 3;
      for (int i = 0; i < 3; ++i) {
        std::string part = name;
        part.replace(at, 10, i == 0 ? ".attn_q." : i == 1 ? ".attn_k." : ".attn_v.");
        w.add_tensor(std::move(part), t.type, shape,
                     std::vector<uint8_t>(all.begin() + i * third, all.begin() + (i + 1) * third));
      }
      continue;
    }
    if (name.starts_with("v.deepstack.")) {  // by the merger's index, not its layer
      const size_t dot = name.find('.', 12);
      const int32_t layer = std::stoi(name.substr(12, dot - 12));
      const auto k = std::find(deepstack.begin(), deepstack.end(), layer) - deepstack.begin();
      name = "v.deepstack_merger." + std::to_string(k) + name.substr(dot);
    }
    for (const auto& [ollama, llama_cpp] : gguf::inline_tower_renames("qwen3vl"))
      if (const size_t at = name.find(llama_cpp); at != std::string::npos) {
        name.replace(at, llama_cpp.size(), ollama);
        break;
      }
    w.add_tensor(std::move(name), t.type, t.shape, bytes_of(t));
  }
}

// Qwen3-VL as Ollama's library publishes it (its converter before the projector layer): llama.cpp's
// qwen3vl keys but the RoPE sections as rope.mrope_section (the HF config's three), no
// n_deepstack_layers or vocab_size, and the twin's tower embedded under qwen3vl.vision.* keys.
void rewrite_qwen3vl(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const std::string p = "qwen3vl.";
  std::vector<int32_t> sections;
  if (const gguf::Array* a = array_of(w, p + "rope.dimension_sections"))
    for (const gguf::Value& v : a->items) sections.push_back(std::get<int32_t>(v.v));
  sections.resize(3);
  for (const char* key : {"rope.dimension_sections", "n_deepstack_layers", "vocab_size"})
    w.erase(p + key);
  w.set_i32s(p + "rope.mrope_section", sections);
  const TwinProjector twin = twin_projector(o, w);
  const gguf::GgufFile& mmproj = twin.file;
  const std::string v = p + "vision.";
  for (const char* key : {"block_count", "embedding_length", "attention.head_count", "patch_size",
                          "spatial_merge_size"})
    w.set_u32(v + key, mmproj.get<uint32_t>(std::string("clip.vision.") + key));
  w.set_u32(v + "num_channels", 3);
  w.set_u32(v + "temporal_patch_size", 2);
  w.set_f32(v + "attention.layer_norm_epsilon", 1e-6f);
  w.set_f32(v + "rope.freq_base", 10000.0f);
  std::vector<int32_t> deepstack;
  for (uint32_t l = 0; l < mmproj.get<uint32_t>("clip.vision.block_count"); ++l)
    if (mmproj.find_tensor("v.deepstack." + std::to_string(l) + ".fc1.weight"))
      deepstack.push_back(static_cast<int32_t>(l));
  w.set_i32s(v + "deepstack_visual_indexes", deepstack);
  w.set_u32(v + "shortest_edge", 65536);  // Qwen3-VL's preprocessor_config.json
  w.set_u32(v + "longest_edge", 16777216);
  w.set_f32s(v + "image_mean", {0.5f, 0.5f, 0.5f});
  w.set_f32s(v + "image_std", {0.5f, 0.5f, 0.5f});
  embed_qwen3vl_tower(twin, deepstack, w);
}

// Gemma 4 as Ollama's converter writes it (convert_gemma4.go): per-layer widths and K/V heads as
// one value where every layer has it, else int32s; no vocab_size; the Gemma 4 BPE as "llama" with
// pre-tokenizer "gemma4", no add_space_prefix, the user-defined chat markers control tokens and
// the byte tokens normal ones (read from tokenizer.json; a test vocabulary of another kind is
// kept); the twin's gemma4v tower under the same names with gemma4.vision.* keys, its patch
// kernel F16, and every clamp bound also packed into v.clamp_data. Experts as the llama.cpp twin
// (split gate and up, ffn_down_exps.scale: the names Ollama's current converter gives them).
void rewrite_gemma4(const MakeModelOptions& o, gguf::GgufWriter& w) {
  const std::string p = "gemma4.";
  w.erase(p + "vocab_size");
  for (const char* key : {"feed_forward_length", "attention.head_count_kv"}) {
    const gguf::Array* a = array_of(w, p + key);
    if (!a) continue;
    std::vector<int32_t> values;
    for (const gguf::Value& v : a->items)
      values.push_back(static_cast<int32_t>(std::get<uint32_t>(v.v)));
    if (std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end()) {
      w.set_u32(p + key, static_cast<uint32_t>(values.front()));
    } else {
      w.set_i32s(p + key, values);
    }
  }
  const gguf::Value* model = w.find("tokenizer.ggml.model");
  if (const auto* name = model ? std::get_if<std::string>(&model->v) : nullptr;
      name && *name == "gemma4") {
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string("tokenizer.ggml.pre", "gemma4");
    w.erase("tokenizer.ggml.add_space_prefix");
    std::vector<int32_t> types;
    for (const gguf::Value& v : array_of(w, "tokenizer.ggml.token_type")->items) {
      const int32_t t = std::get<int32_t>(v.v);
      types.push_back(t == 4 ? 3 : t == 6 ? 1 : t);  // user-defined -> control, byte -> normal
    }
    w.set_i32s("tokenizer.ggml.token_type", types);
  }

  const TwinProjector twin = twin_projector(o, w);
  const gguf::GgufFile& mmproj = twin.file;
  const std::string v = p + "vision.", clip = "clip.vision.";
  for (const char* key : {"block_count", "embedding_length", "attention.head_count",
                          "feed_forward_length", "patch_size"})
    w.set_u32(v + key, mmproj.get<uint32_t>(clip + key));
  w.set_u32(v + "num_channels", 3);
  w.set_u32(v + "projector.scale_factor", mmproj.get<uint32_t>(clip + "projector.scale_factor"));
  w.set_f32(v + "attention.layer_norm_epsilon",
            mmproj.get<float>(clip + "attention.layer_norm_epsilon"));
  for (const gguf::TensorInfo& t : mmproj.tensors()) {
    const auto data = mmproj.tensor_data(t);
    if (t.name == "v.patch_embd.weight" && t.type == gguf::TensorType::F32) {
      std::vector<uint8_t> half(data.size() / 2);
      for (size_t i = 0; i < half.size() / 2; ++i) {
        float x;
        std::memcpy(&x, &data[4 * i], 4);
        const uint16_t h = gguf::fp32_to_fp16(x);
        std::memcpy(&half[2 * i], &h, 2);
      }
      w.add_tensor(t.name, gguf::TensorType::F16, t.shape, std::move(half));
      continue;
    }
    w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<float> clamps;
  auto pack = [&](const std::string& base) {
    for (const char* bound : {".input_min", ".input_max", ".output_min", ".output_max"}) {
      const gguf::TensorInfo* t = mmproj.find_tensor(base + bound);
      float x = 0.0f;  // the converter's fill for a bound the checkpoint lacks
      if (t) std::memcpy(&x, mmproj.tensor_data(*t).data(), sizeof x);
      clamps.push_back(x);
    }
  };
  for (uint32_t l = 0; l < mmproj.get<uint32_t>(clip + "block_count"); ++l)
    for (const char* linear :
         {"attn_q", "attn_k", "attn_v", "attn_out", "ffn_gate", "ffn_up", "ffn_down"})
      pack("v.blk." + std::to_string(l) + "." + linear);
  pack("mm.input_projection");
  std::vector<uint8_t> bytes(clamps.size() * sizeof(float));
  std::memcpy(bytes.data(), clamps.data(), bytes.size());
  w.add_tensor("v.clamp_data", gguf::TensorType::F32, {clamps.size()}, std::move(bytes));
}

void rewrite_qwen3moe(gguf::GgufWriter& w) {
  w.erase("qwen3moe.expert_feed_forward_length");
  w.set_bool("qwen3moe.norm_top_k_prob", true);
}

// gpt-oss as Ollama's library publishes it (docs/ollama-layouts.md): the architecture and its keys
// as `gptoss`, three tensor names of its own, no expert width or rope scaling type, and a GPT-2
// vocabulary's pre-tokenizer left at "default".
void rewrite_gptoss(gguf::GgufWriter& w) {
  const std::string from = "gpt-oss.", to = "gptoss.";
  const uint32_t n_layer = std::get<uint32_t>(w.find(from + "block_count")->v);
  w.set_string("general.architecture", "gptoss");
  for (const std::string& key : w.keys()) {
    if (!key.starts_with(from)) continue;
    if (key == from + "expert_feed_forward_length" || key == from + "rope.scaling.type") {
      w.erase(key);
      continue;
    }
    gguf::Value v = *w.find(key);
    w.erase(key);
    w.set(to + key.substr(from.size()), std::move(v));
  }
  const gguf::Value* model = w.find("tokenizer.ggml.model");
  const auto* name = model ? std::get_if<std::string>(&model->v) : nullptr;
  if (name && *name == "gpt2") w.set_string("tokenizer.ggml.pre", "default");
  for (uint32_t l = 0; l < n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    w.rename_tensor(b + "attn_sinks.weight", b + "attn_sinks");
    w.rename_tensor(b + "attn_output.weight", b + "attn_out.weight");
    w.rename_tensor(b + "attn_output.bias", b + "attn_out.bias");
    w.rename_tensor(b + "post_attention_norm.weight", b + "ffn_norm.weight");
  }
}

}  // namespace

std::optional<FileLayout> file_layout_from_name(std::string_view name) {
  if (name == "llama.cpp") return FileLayout::LlamaCpp;
  if (name == "ollama") return FileLayout::Ollama;
  return std::nullopt;
}

void rewrite_as_ollama_layout(const MakeModelOptions& o, gguf::GgufWriter& w) {
  if (o.arch == "llama") {
    rewrite_llama(w);
  } else if (o.arch == "gemma3") {
    rewrite_gemma3(o, w);
  } else if (o.arch == "gemma-embedding") {
    rewrite_gemma_embedding(o, w);
  } else if (o.arch == "mistral3") {
    rewrite_mistral3(o, w);
  } else if (o.arch == "qwen3moe") {
    rewrite_qwen3moe(w);
  } else if (o.arch == "qwen2vl") {
    rewrite_qwen2vl(o, w);
  } else if (o.arch == "qwen3vl") {
    rewrite_qwen3vl(o, w);
  } else if (o.arch == "gemma4") {
    rewrite_gemma4(o, w);
  } else if (o.arch == "gpt-oss") {
    rewrite_gptoss(w);
  } else if (o.arch == "bert") {
    rewrite_snowflake_arctic_embed2(w);
  } else {
    throw std::invalid_argument(
        "make-model --layout ollama: no Ollama layout for '" + o.arch +
        "' (llama, gemma3, gemma-embedding, gemma4, mistral3, qwen3moe, qwen2vl, qwen3vl, gpt-oss, "
        "bert with an XLM-R vocabulary; Ollama's converter writes the other architectures as "
        "llama.cpp's does: docs/ollama-layouts.md)");
  }
}

}  // namespace vkllm::model
