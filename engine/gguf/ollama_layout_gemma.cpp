// Ollama's Gemma layouts: gemma3 (text), EmbeddingGemma (published as gemma3) and gemma4 (text).
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/gguf/ollama_layout_edit.h"

namespace vkllm::gguf::ollama {

// gemma3 as Ollama's converter wrote the published 1B/4B/12B/27B: the vision tower and projector
// (v.*, mm.* tensors; gemma3.vision.*, gemma3.mm.* keys) in the text file; no RMS epsilon; rope
// bases either absent (multimodal sizes) or under nested names (1B); no linear rope scaling for
// the 128k-context sizes; tokenizer arrays that keep multimodal tokens past the embedding rows.
// The RMSNorm weights already carry Gemma's +1, as llama.cpp's converter writes them.
void translate_gemma3(GgufFile& f) {
  std::vector<std::string> markers;
  if (f.has("gemma3.mm.tokens_per_image")) markers.emplace_back("gemma3.mm.tokens_per_image");
  if (any_tensor_with_prefix(f, "v.")) markers.emplace_back("v.* tensors");
  if (any_tensor_with_prefix(f, "mm.")) markers.emplace_back("mm.* tensors");
  for (const char* key : {"gemma3.rope.global.freq_base", "gemma3.rope.local.freq_base",
                          "tokenizer.ggml.add_padding_token", "tokenizer.ggml.add_unknown_token"}) {
    if (f.has(key)) markers.emplace_back(key);
  }
  // Every published file also lacks the RMS epsilon, but that alone is no marker (Ollama's layer
  // takes it as one): files made by hand or by other tools omit it too, and the loaders' default
  // is the value the translation would fill in.
  if (markers.empty()) return;
  if (!f.has("gemma3.attention.layer_norm_rms_epsilon")) {
    markers.emplace_back("no gemma3.attention.layer_norm_rms_epsilon");
  }
  Translation t(f, "gemma3", std::move(markers));
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) t.refuse("it has no 2-D token_embd.weight tensor");
  const auto context = f.get_optional<uint32_t>("gemma3.context_length");
  if (!context) t.refuse("gemma3.context_length is missing");

  t.move_f32("gemma3.rope.global.freq_base", "gemma3.rope.freq_base");
  t.move_f32("gemma3.rope.local.freq_base", "gemma3.rope.freq_base_swa");
  t.set_default_f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  t.set_default_f32("gemma3.rope.freq_base", 1000000.0f);
  // The 4B/12B/27B stretch a 16k training context to 128k with linear scaling 8 (their HF
  // config); the 1B (32k) has none.
  if (*context >= 131072 && !f.has("gemma3.rope.scaling.type")) {
    t.set("gemma3.rope.scaling.type", Value{std::string("linear")},
          "linear (the 128k-context sizes' scaling, missing)");
    t.set("gemma3.rope.scaling.factor", Value{8.0f}, "8 (likewise)");
  }
  t.truncate_vocab(static_cast<size_t>(embd->shape[1]));
  // The text view carries no vision keys or tensors (llama.cpp keeps them in a separate mmproj
  // file), so nothing reports a vision capability the text loader cannot serve.
  t.hide_tensors_with_prefix("v.");
  t.hide_tensors_with_prefix("mm.");
  t.erase_keys_with_prefix("gemma3.vision.");
  t.erase_keys_with_prefix("gemma3.mm.");
  t.finish();
}

namespace {

constexpr uint32_t kEmbeddingGemmaSwaPeriod = 6;  // five local layers per global one

// Ollama writes the window pattern as one bool per layer (true: local); llama.cpp's
// gemma-embedding has no such key and always uses five local layers per global one, so a file
// with any other pattern cannot be run as its llama.cpp twin.
void check_swa_pattern(const GgufFile& f, const Translation& t, const std::string& key) {
  const Value* v = f.find(key);
  if (!v) return;
  if (const auto* period = std::get_if<uint32_t>(&v->v)) {
    if (*period != kEmbeddingGemmaSwaPeriod) {
      t.refuse(key + " is " + std::to_string(*period) + ", gemma-embedding's is 6");
    }
    return;
  }
  const Array* layers = array_value(f, key);
  if (!layers) t.refuse(key + " is neither a period nor a per-layer list");
  for (size_t l = 0; l < layers->items.size(); ++l) {
    const auto* local = std::get_if<bool>(&layers->items[l].v);
    const bool want = l % kEmbeddingGemmaSwaPeriod < kEmbeddingGemmaSwaPeriod - 1;
    if (!local || *local != want) {
      t.refuse(key + " marks layer " + std::to_string(l) + (want ? " global" : " local") +
               ", gemma-embedding has five local layers per global one");
    }
  }
}

}  // namespace

// EmbeddingGemma as Ollama published it (embeddinggemma:300m, before Ollama's converter learnt
// llama.cpp's gemma-embedding): general.architecture gemma3 with gemma3.* keys, a pooling type,
// and the sentence-transformers projection after pooling as dense.0.weight (n_embd -> N) and
// dense.1.weight (N -> n_embd); the window pattern as per-layer bools, the local rope base under
// a nested name, no dense_*_feat_* keys. llama.cpp's layout names the architecture
// gemma-embedding and the projections dense_2 / dense_3 with their widths as keys; the weights
// are the same bytes.
void translate_embedding_gemma(GgufFile& f) {
  const TensorInfo* d0 = f.find_tensor("dense.0.weight");
  const TensorInfo* d1 = f.find_tensor("dense.1.weight");
  if (!d0 && !d1) return;
  std::vector<std::string> markers;
  if (d0) markers.emplace_back("dense.0.weight");
  if (d1) markers.emplace_back("dense.1.weight");
  if (f.has("gemma3.pooling_type")) markers.emplace_back("gemma3.pooling_type");
  Translation t(f, "embeddinggemma", std::move(markers));
  if (!d0 || !d1) {
    t.refuse(std::string("it has no ") + (d0 ? "dense.1.weight" : "dense.0.weight") +
             ": EmbeddingGemma's projection needs both");
  }
  const auto n_embd = f.get_optional<uint32_t>("gemma3.embedding_length");
  if (!n_embd) t.refuse("gemma3.embedding_length is missing");
  auto shape = [](const TensorInfo& ti) {
    std::string s;
    for (uint64_t d : ti.shape) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s;
  };
  if (d0->shape.size() != 2 || d1->shape.size() != 2 || d0->shape[0] != *n_embd ||
      d1->shape[1] != *n_embd || d1->shape[0] != d0->shape[1]) {
    t.refuse("dense.0.weight (" + shape(*d0) + ") and dense.1.weight (" + shape(*d1) +
             ") do not project " + std::to_string(*n_embd) + " -> N -> " + std::to_string(*n_embd));
  }
  const auto width = static_cast<uint32_t>(d0->shape[1]);
  if (!f.has("gemma3.pooling_type")) {
    t.refuse(
        "gemma3.pooling_type is missing (Ollama runs such a file as an embedding model "
        "only with one)");
  }
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) t.refuse("it has no 2-D token_embd.weight tensor");
  const auto rows = static_cast<size_t>(embd->shape[1]);
  check_swa_pattern(f, t, "gemma3.attention.sliding_window_pattern");

  t.set("general.architecture", Value{std::string("gemma-embedding")}, "gemma-embedding");
  t.rename_key_prefix("gemma3.", "gemma-embedding.");
  const std::string p = "gemma-embedding.";
  t.move_f32(p + "rope.global.freq_base", p + "rope.freq_base");
  t.move_f32(p + "rope.local.freq_base", p + "rope.freq_base_swa");
  // llama.cpp's gemma-embedding is bidirectional with the fixed pattern whatever these say.
  for (const std::string& key : {p + "attention.sliding_window_pattern", p + "attention.causal"}) {
    if (f.has(key)) {
      f.erase_key(key);
      t.note("hid " + key);
    }
  }
  const uint32_t n = *n_embd;
  t.set(p + "dense_2_feat_in", Value{n}, std::to_string(n) + " (dense.0.weight's rows)");
  t.set(p + "dense_2_feat_out", Value{width}, std::to_string(width) + " (likewise)");
  t.set(p + "dense_3_feat_in", Value{width}, std::to_string(width) + " (dense.1.weight's rows)");
  t.set(p + "dense_3_feat_out", Value{n}, std::to_string(n) + " (likewise)");
  t.rename_tensor("dense.0.weight", "dense_2.weight");
  t.rename_tensor("dense.1.weight", "dense_3.weight");
  if (f.find_tensor("norm.weight")) t.rename_tensor("norm.weight", "output_norm.weight");
  t.truncate_vocab(rows);
  t.finish();
}

// Gemma 4 as Ollama's converter writes it (convert_gemma4.go), read as llama-server reads it
// through Ollama's layer (handle_gemma4): one file with the vision tower and projector (v.*,
// mm.* tensors; gemma4.vision.* keys) and, for the sizes with audio, the conformer (a.*, mm.a.*;
// gemma4.audio.*), all hidden here (engine/gguf/inline_projector.h reads the vision part); the
// vocabulary as tokenizer.ggml.model "llama" with pre-tokenizer "gemma4", llama.cpp's "gemma4"
// BPE (the merges are there), without add_space_prefix; the routers' per-expert scales of older
// files as ffn_gate_inp.per_expert_scale, llama.cpp's ffn_down_exps.scale. Per-layer widths and
// K/V heads as int32 arrays or one value, and no vocab_size, read as llama.cpp's are. The
// markers are the embedded towers and that vocabulary: a llama.cpp-layout gemma4 has neither.
void translate_gemma4(GgufFile& f) {
  std::vector<std::string> markers;
  for (const char* prefix : {"v.", "mm.", "a.", "model.vision_tower."}) {
    if (any_tensor_with_prefix(f, prefix)) markers.push_back(std::string(prefix) + "* tensors");
  }
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  const std::string* pre = string_value(f, "tokenizer.ggml.pre");
  const bool ollama_vocab = model && *model == "llama" && pre && *pre == "gemma4";
  if (ollama_vocab) markers.emplace_back("tokenizer.ggml.model 'llama' with pre 'gemma4'");
  if (markers.empty()) return;
  Translation t(f, "gemma4", std::move(markers));
  if (ollama_vocab) {
    if (!f.has("tokenizer.ggml.merges")) {
      t.refuse("its Gemma 4 vocabulary ('llama' with pre-tokenizer 'gemma4') has no merges");
    }
    t.set("tokenizer.ggml.model", Value{std::string("gemma4")},
          "gemma4 (was llama: Ollama's name for the Gemma 4 BPE)");
    if (!f.has("tokenizer.ggml.add_space_prefix")) {
      t.set("tokenizer.ggml.add_space_prefix", Value{false}, "false (Gemma 4's, missing)");
    }
  }
  t.rename_tensors_containing(".ffn_gate_inp.per_expert_scale", ".ffn_down_exps.scale");
  for (const char* prefix : {"v.", "mm.", "a.", "model.vision_tower."}) {
    t.hide_tensors_with_prefix(prefix);
  }
  t.erase_keys_with_prefix("gemma4.vision.");
  t.erase_keys_with_prefix("gemma4.audio.");
  t.finish();
}

}  // namespace vkllm::gguf::ollama
