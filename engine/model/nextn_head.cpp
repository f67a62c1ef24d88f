#include "engine/model/nextn_head.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace vkllm::model {

namespace {

bool has_nextn_arch(const std::string& arch) {
  return arch == "qwen35" || arch == "qwen35moe" || arch == "qwen3next";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

uint32_t nextn_block_count(const gguf::GgufFile& f) {
  const auto arch = f.get_optional<std::string>("general.architecture");
  if (!arch || !has_nextn_arch(*arch)) return 0;
  return f.get_optional<uint32_t>(*arch + ".nextn_predict_layers").value_or(0);
}

void view_as_nextn_head(gguf::GgufFile& f) {
  const std::string arch = f.get_optional<std::string>("general.architecture").value_or("");
  if (!has_nextn_arch(arch))
    throw std::runtime_error("no multi-token-prediction block vkllm runs in a " + arch + " model");
  const uint32_t nextn = nextn_block_count(f);
  const std::string p = arch + ".";
  const uint32_t blocks = f.get<uint32_t>(p + "block_count");
  if (nextn == 0 || nextn >= blocks)
    throw std::runtime_error("the model has no multi-token-prediction (nextn) block");
  const std::string own = "blk." + std::to_string(blocks - nextn) + ".";

  std::vector<std::string> names;
  for (const auto& t : f.tensors()) names.push_back(t.name);
  for (const std::string& n : names)
    if (starts_with(n, "blk.") && !starts_with(n, own)) f.hide_tensor(n);
  for (const std::string& n : names)
    if (starts_with(n, own)) f.rename_tensor(n, "blk.0." + n.substr(own.size()));
  // The block's own output norm, LM head and embeddings stand in for the model's.
  auto take = [&](const std::string& from, const std::string& to) {
    if (!f.find_tensor(from)) return false;
    if (f.find_tensor(to)) f.hide_tensor(to);
    f.rename_tensor(from, to);
    return true;
  };
  take("blk.0.nextn.shared_head_norm.weight", "output_norm.weight");
  take("blk.0.nextn.shared_head_head.weight", "output.weight");
  if (f.find_tensor("blk.0.nextn.embed_tokens.weight")) {
    // A tied LM head stays the model's embeddings.
    if (!f.find_tensor("output.weight")) f.rename_tensor("token_embd.weight", "output.weight");
    take("blk.0.nextn.embed_tokens.weight", "token_embd.weight");
  }
  f.set_value(p + "block_count", gguf::Value{uint32_t{1}});
  f.erase_key(p + "nextn_predict_layers");
  f.erase_key(p + "attention.recurrent_layers");
  f.set_value(p + "full_attention_interval", gguf::Value{uint32_t{1}});
  f.set_value(p + "nextn_head", gguf::Value{true});
}

}  // namespace vkllm::model
