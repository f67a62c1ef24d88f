#include "tests/reference/lora_reference.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::reference {

namespace fs = std::filesystem;

std::vector<std::string> lora_case_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

LoraCase load_lora_case(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  if (!in) throw std::runtime_error("no LoRA reference " + name);
  const auto j = nlohmann::json::parse(in);
  LoraCase c;
  c.name = name;
  const auto& b = j.at("base");
  c.base.arch = b.at("arch").get<std::string>();
  c.base.shape = model::parse_model_shape(b.at("shape").get<std::string>());
  const auto type = model::file_type_from_name(b.at("type").get<std::string>());
  if (!type) throw std::runtime_error(name + ": unknown base type");
  c.base.file_type = *type;
  c.base.seed = b.at("seed").get<uint64_t>();
  c.vocab = shared_testdata_dir() / b.at("vocab").get<std::string>();

  const auto& a = j.at("adapter");
  c.adapter.rank = a.at("rank").get<uint32_t>();
  c.adapter.alpha = a.at("alpha").get<float>();
  c.adapter.seed = a.at("seed").get<uint64_t>();
  c.adapter.targets = a.at("targets").get<std::vector<std::string>>();
  const auto atype = gguf::type_from_name(a.at("type").get<std::string>());
  if (!atype) throw std::runtime_error(name + ": unknown adapter type");
  c.adapter.type = *atype;
  c.scale = j.value("scale", 1.0f);

  LlamaCppCase& e = c.expected;
  e.name = name;
  e.prompt_text = j.at("prompt").get<std::string>();
  e.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  e.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
  e.greedy_margins = j.at("greedy_margins").get<std::vector<float>>();
  e.last_logits = j.at("last_logits").get<std::vector<float>>();
  e.quantized = model::is_quantized(c.base.file_type);
  e.min_cosine = e.quantized ? 0.999 : 0.9999;
  return c;
}

std::vector<uint8_t> lora_case_base_bytes(const LoraCase& c) {
  const auto vocab = gguf::GgufFile::open(c.vocab);
  gguf::GgufWriter w;
  model::build_random_model(c.base, vocab, w);
  return w.serialize();
}

std::vector<uint8_t> lora_case_adapter_bytes(const LoraCase& c, const gguf::GgufFile& base) {
  gguf::GgufWriter w;
  model::build_random_lora(c.adapter, base, w);
  return w.serialize();
}

}  // namespace vkllm::reference
