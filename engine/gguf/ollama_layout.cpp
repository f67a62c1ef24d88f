#include "engine/gguf/ollama_layout.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/gguf/ollama_layout_edit.h"

namespace vkllm::gguf {

namespace ollama {

namespace {

bool contains(const std::string* s, std::string_view needle) {
  return s && s->find(needle) != std::string::npos;
}

}  // namespace

// Llama 3 files whose tokenizer metadata predates llama.cpp's pre-tokenizer key: no (or
// "default") tokenizer.ggml.pre, no add_bos_token, EOS/EOT on <|end_of_text|>, so the text would
// be split with the wrong pre-tokenizer, without BOS, and instruct turns would not end. Recognised
// by the missing pre-tokenizer on a Llama 3 vocabulary (<|eot_id|> at 128009 and Llama 3's turn
// header in the vocabulary or chat template). Unlike Ollama's layer, an EOS of 128001 alone is no
// marker: it is what llama.cpp's converter writes for the base models.
void translate_llama3(GgufFile& f) {
  const std::string* pre = string_value(f, "tokenizer.ggml.pre");
  if (pre && !pre->empty() && *pre != "default") return;
  const std::string* chat_template = string_value(f, "tokenizer.chat_template");
  const bool template_markers =
      contains(chat_template, "<|start_header_id|>") || contains(chat_template, "<|eot_id|>");
  const bool eot_at_128009 = token_at(f, 128009) == "<|eot_id|>";
  const bool header_at_128006 = token_at(f, 128006) == "<|start_header_id|>";
  std::vector<std::string> markers{pre ? "tokenizer.ggml.pre '" + *pre + "'"
                                       : "no tokenizer.ggml.pre"};
  if (eot_at_128009) markers.emplace_back("<|eot_id|> at 128009");
  if (header_at_128006) markers.emplace_back("<|start_header_id|> at 128006");
  if (template_markers) markers.emplace_back("Llama 3 chat template");
  if (!eot_at_128009) {
    if (!template_markers) return;  // some other llama-architecture vocabulary
    const Array* tokens = array_value(f, "tokenizer.ggml.tokens");
    const size_t n = tokens ? tokens->items.size() : 0;
    Translation(f, "llama3", std::move(markers))
        .refuse(n > 128009 ? "token 128009 is '" + std::string(token_at(f, 128009)) +
                                 "', not <|eot_id|>: the vocabulary is not Llama 3's"
                           : "the vocabulary has " + std::to_string(n) +
                                 " tokens, no <|eot_id|> at 128009: it is not Llama 3's");
  }
  if (!header_at_128006 && !template_markers) return;
  Translation t(f, "llama3", std::move(markers));
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  if (!model || *model != "gpt2") {
    t.refuse("tokenizer.ggml.model is " + (model ? "'" + *model + "'" : std::string("missing")) +
             ", Llama 3's is gpt2");
  }
  t.set("tokenizer.ggml.pre", Value{std::string("llama-bpe")}, "llama-bpe");
  if (!f.has("tokenizer.ggml.add_bos_token")) {
    t.set("tokenizer.ggml.add_bos_token", Value{true}, "true (Llama 3's, missing)");
  }
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    const auto id = f.get_optional<int64_t>(key);
    if (!id || *id == 128001) {
      t.set(key, Value{uint32_t{128009}},
            "128009 <|eot_id|> (was " + (id ? std::to_string(*id) : std::string("missing")) + ")");
    }
  }
  t.finish();
}

// Ministral 3 (mistral3) as Ollama's converter wrote it before adopting llama.cpp's key names:
// the YaRN betas as rope.scaling.beta_fast / beta_slow, the magnitude as mscale / mscale_all_dim,
// Llama 4's attention temperature as rope.scaling_beta; the Pixtral vision tower and projector
// (v.*, mm.* tensors; mistral3.vision.*, mistral3.mm.* keys) in the text file; and, on some
// files, no pre-tokenizer (Tekken's). Q/K are permuted exactly as llama.cpp's converter does.
void translate_mistral3(GgufFile& f) {
  const std::string p = "mistral3.";
  std::vector<std::string> markers;
  if (any_tensor_with_prefix(f, "v.")) markers.emplace_back("v.* tensors");
  if (any_tensor_with_prefix(f, "mm.")) markers.emplace_back("mm.* tensors");
  for (const char* key : {"rope.scaling.beta_fast", "rope.scaling.beta_slow", "rope.scaling.mscale",
                          "rope.scaling.mscale_all_dim", "rope.scaling_beta"}) {
    if (f.has(p + key)) markers.push_back(p + key);
  }
  if (markers.empty()) return;
  Translation t(f, "mistral3", std::move(markers));
  // llama.cpp's layout keeps one magnitude (yarn_log_multiplier, Ollama's mscale_all_dim): the
  // attention factor it implies equals DeepSeek's mscale / mscale_all_dim ratio only when both
  // are the same, as in every Ministral 3.
  const auto mscale = f.get_optional<float>(p + "rope.scaling.mscale");
  const auto all_dim = f.get_optional<float>(p + "rope.scaling.mscale_all_dim");
  if (mscale && (!all_dim || *all_dim != *mscale)) {
    t.refuse(p + "rope.scaling.mscale (" + number(*mscale) + ") without an equal " + p +
             "rope.scaling.mscale_all_dim: llama.cpp's layout cannot express it");
  }
  t.move_f32(p + "rope.scaling.beta_fast", p + "rope.scaling.yarn_beta_fast");
  t.move_f32(p + "rope.scaling.beta_slow", p + "rope.scaling.yarn_beta_slow");
  t.move_f32(p + "rope.scaling.mscale_all_dim", p + "rope.scaling.yarn_log_multiplier");
  t.move_f32(p + "rope.scaling_beta", p + "attention.temperature_scale");
  if (mscale) {
    f.erase_key(p + "rope.scaling.mscale");
    t.note("hid " + p + "rope.scaling.mscale (equal to mscale_all_dim)");
  }
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  const std::string* pre = string_value(f, "tokenizer.ggml.pre");
  if (model && *model == "gpt2" && (!pre || pre->empty() || *pre == "default")) {
    t.set("tokenizer.ggml.pre", Value{std::string("tekken")}, "tekken (Mistral's, missing)");
  }
  t.hide_tensors_with_prefix("v.");
  t.hide_tensors_with_prefix("mm.");
  t.erase_keys_with_prefix(p + "vision.");
  t.erase_keys_with_prefix(p + "mm.");
  for (const std::string& key : {p + "image_token_index", p + "spatial_merge_size"}) {
    if (f.has(key)) {
      f.erase_key(key);
      t.note("hid " + key);
    }
  }
  t.finish();
}

// Qwen3 MoE as Ollama's converter writes it: no expert_feed_forward_length (the expert width is
// only in the tensors' shapes; loaders fall back to feed_forward_length / expert_used_count,
// which matches the published 30B-A3B and 235B-A22B by coincidence) and norm_top_k_prob, a key
// llama.cpp's converter does not write because its qwen3moe always renormalises the selected
// experts' weights.
void translate_qwen3moe(GgufFile& f) {
  const std::string p = "qwen3moe.";
  const Value* norm = f.find(p + "norm_top_k_prob");
  if (!norm) return;
  const std::string width_key = p + "expert_feed_forward_length";
  std::vector<std::string> markers{p + "norm_top_k_prob"};
  if (!f.has(width_key)) markers.push_back("no " + width_key);
  Translation t(f, "qwen3moe", std::move(markers));
  const auto* renormalise = std::get_if<bool>(&norm->v);
  if (!renormalise) t.refuse(p + "norm_top_k_prob is not a bool");
  if (!*renormalise) {
    t.refuse(p +
             "norm_top_k_prob is false: llama.cpp's qwen3moe always renormalises the "
             "selected experts' weights");
  }
  if (!f.has(width_key)) {
    const TensorInfo* gate = f.find_tensor("blk.0.ffn_gate_exps.weight");
    if (!gate || gate->shape.size() != 3) {
      t.refuse("it has no " + width_key + " and no 3-D blk.0.ffn_gate_exps.weight to read it from");
    }
    const auto width = static_cast<uint32_t>(gate->shape[1]);
    t.set(width_key, Value{width},
          std::to_string(width) + " (blk.0.ffn_gate_exps.weight's rows, missing)");
  }
  f.erase_key(p + "norm_top_k_prob");
  t.note("hid " + p + "norm_top_k_prob (true, llama.cpp's behaviour)");
  t.finish();
}

// gpt-oss as Ollama's converter first wrote it, the layout of the files its library publishes:
// architecture `gptoss` with gptoss.* keys; attn_out, attn_sinks (no .weight) and ffn_norm where
// llama.cpp has attn_output, attn_sinks.weight and post_attention_norm; no
// expert_feed_forward_length or rope.scaling.type; a pre-tokenizer other than o200k's. The
// architecture name alone is the marker: nothing but Ollama's converter writes `gptoss`.
void translate_gptoss(GgufFile& f) {
  Translation t(f, "gptoss", {"general.architecture 'gptoss'"});
  t.set("general.architecture", Value{std::string("gpt-oss")}, "gpt-oss (was gptoss)");
  t.rename_key_prefix("gptoss.", "gpt-oss.");
  const std::string p = "gpt-oss.";
  for (const char* key : {"block_count", "expert_count", "expert_used_count"}) {
    if (!f.has(p + key)) t.refuse("it has no gptoss." + std::string(key));
  }
  const std::string width_key = p + "expert_feed_forward_length";
  if (!f.has(width_key)) {
    const TensorInfo* gate = f.find_tensor("blk.0.ffn_gate_exps.weight");
    if (!gate || gate->shape.size() != 3) {
      t.refuse(
          "it has no gptoss.expert_feed_forward_length and no 3-D "
          "blk.0.ffn_gate_exps.weight to read it from (a fused ffn_gate_up_exps is not "
          "translated)");
    }
    const auto width = static_cast<uint32_t>(gate->shape[1]);
    t.set(width_key, Value{width},
          std::to_string(width) + " (blk.0.ffn_gate_exps.weight's rows, missing)");
  }
  if (!f.has(p + "rope.scaling.type") && f.has(p + "rope.scaling.factor")) {
    t.set(p + "rope.scaling.type", Value{std::string("yarn")}, "yarn (gpt-oss's, missing)");
  }
  const std::string* model = string_value(f, "tokenizer.ggml.model");
  const std::string* pre = string_value(f, "tokenizer.ggml.pre");
  if (model && *model == "gpt2" && (!pre || *pre != "gpt-4o")) {
    t.set("tokenizer.ggml.pre", Value{std::string("gpt-4o")},
          "gpt-4o (o200k's, was " + (pre ? "'" + *pre + "'" : std::string("missing")) + ")");
  }
  t.rename_tensors_containing(".attn_out.", ".attn_output.");
  std::vector<std::string> sinks;
  for (const auto& tensor : f.tensors()) {
    if (tensor.name.ends_with(".attn_sinks")) sinks.push_back(tensor.name);
  }
  for (const auto& name : sinks) {
    if (f.find_tensor(name + ".weight"))
      t.refuse("it has both " + name + " and " + name + ".weight");
    f.rename_tensor(name, name + ".weight");
  }
  if (!sinks.empty()) {
    t.note(std::to_string(sinks.size()) + " tensors *.attn_sinks renamed to *.attn_sinks.weight");
  }
  t.rename_tensors_containing(".ffn_norm.", ".post_attention_norm.");
  for (const char* name : {"blk.0.attn_output.weight", "blk.0.attn_sinks.weight",
                           "blk.0.post_attention_norm.weight"}) {
    if (!f.find_tensor(name)) {
      t.refuse("it has no " + std::string(name) +
               " after the renames (a fused attn_qkv is not "
               "translated)");
    }
  }
  t.finish();
}

// <p>rope.dimension_sections (four, the last 0) from Ollama's <p>rope.mrope_section (the HF
// config's three), which is then hidden; `was` names the key as the file has it.
void mrope_sections_as_llama_cpp(Translation& t, GgufFile& f, const std::string& p,
                                 const std::string& was) {
  const std::string from = p + "rope.mrope_section";
  if (!f.has(p + "rope.dimension_sections")) {
    const Array* sections = array_value(f, from);
    std::vector<int32_t> values;
    if (sections) {
      for (const Value& v : sections->items) {
        if (const auto* i = std::get_if<int32_t>(&v.v)) values.push_back(*i);
      }
    }
    if (!sections || values.size() != sections->items.size() || values.size() < 3 ||
        values.size() > 4)
      t.refuse("it has no " + was + " of 3 int32 sections");
    values.resize(4, 0);
    auto four = std::make_shared<Array>();
    four->element_type = ValueType::I32;
    for (int32_t v : values) four->items.push_back(Value{v});
    t.set(p + "rope.dimension_sections", Value{std::move(four)},
          "[" + std::to_string(values[0]) + ", " + std::to_string(values[1]) + ", " +
              std::to_string(values[2]) + ", " + std::to_string(values[3]) +
              "] (the mrope_section, padded)");
  }
  if (f.has(from)) {
    f.erase_key(from);
    t.note("hid " + from);
  }
}

// Qwen2.5-VL as Ollama's converter writes it: architecture `qwen25vl` with qwen25vl.* keys (its
// qwen2 converter's, renamed), the multi-section RoPE as rope.mrope_section (the HF config's three
// sections) where llama.cpp's qwen2vl reads rope.dimension_sections (four, the last 0), and the
// vision tower embedded (v.*, qwen25vl.vision.*), hidden here. The architecture name is the
// marker: nothing but Ollama's converter writes `qwen25vl`.
void translate_qwen25vl(GgufFile& f) {
  Translation t(f, "qwen25vl", {"general.architecture 'qwen25vl'"});
  t.set("general.architecture", Value{std::string("qwen2vl")}, "qwen2vl (was qwen25vl)");
  t.rename_key_prefix("qwen25vl.", "qwen2vl.");
  const std::string p = "qwen2vl.";
  mrope_sections_as_llama_cpp(t, f, p, "qwen25vl.rope.mrope_section");
  t.hide_tensors_with_prefix("v.");
  t.hide_tensors_with_prefix("mm.");
  t.erase_keys_with_prefix(p + "vision.");
  t.finish();
}

// Qwen3-VL as Ollama's library publishes it (its converter before the projector moved to its own
// layer): llama.cpp's qwen3vl keys but the RoPE sections as rope.mrope_section (three) and no
// n_deepstack_layers, the tower embedded (v.*, qwen3vl.vision.*, its deepstack layers as
// vision.deepstack_visual_indexes), hidden here: the text view is llama.cpp's. The marker is
// rope.mrope_section, which llama.cpp's converter never writes.
void translate_qwen3vl(GgufFile& f) {
  const std::string p = "qwen3vl.";
  if (!f.has(p + "rope.mrope_section")) return;
  Translation t(f, "qwen3vl", {"qwen3vl.rope.mrope_section"});
  mrope_sections_as_llama_cpp(t, f, p, p + "rope.mrope_section");
  if (!f.has(p + "n_deepstack_layers")) {
    const Array* indexes = array_value(f, p + "vision.deepstack_visual_indexes");
    const auto n = static_cast<uint32_t>(indexes ? indexes->items.size() : 0);
    t.set(p + "n_deepstack_layers", Value{n},
          std::to_string(n) + " (the vision.deepstack_visual_indexes)");
  }
  t.hide_tensors_with_prefix("v.");
  t.hide_tensors_with_prefix("mm.");
  t.erase_keys_with_prefix(p + "vision.");
  t.finish();
}

}  // namespace ollama

void translate_known_layouts(GgufFile& file) {
  if (const std::string* type = ollama::string_value(file, "general.type");
      type && *type == "adapter") {
    return;
  }
  const std::string* arch = ollama::string_value(file, "general.architecture");
  if (!arch) return;
  if (*arch == "gemma3") {
    if (file.find_tensor("dense.0.weight") || file.find_tensor("dense.1.weight")) {
      ollama::translate_embedding_gemma(file);
    } else {
      ollama::translate_gemma3(file);
    }
  } else if (*arch == "gemma4") {
    ollama::translate_gemma4(file);
  } else if (*arch == "llama") {
    ollama::translate_llama3(file);
  } else if (*arch == "mistral3") {
    ollama::translate_mistral3(file);
  } else if (*arch == "qwen3moe") {
    ollama::translate_qwen3moe(file);
  } else if (*arch == "qwen25vl") {
    ollama::translate_qwen25vl(file);
  } else if (*arch == "qwen3vl") {
    ollama::translate_qwen3vl(file);
  } else if (*arch == "gptoss") {
    ollama::translate_gptoss(file);
  } else if (*arch == "bert") {
    ollama::translate_snowflake_arctic_embed2(file);
  }
  split_stacked_experts(file);
}

}  // namespace vkllm::gguf
