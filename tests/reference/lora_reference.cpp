#include "tests/reference/lora_reference.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"
#include "tests/reference/model_reference.h"

namespace vkllm::reference {

namespace fs = std::filesystem;

LoraCase load_lora_case(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  if (!in) throw std::runtime_error("no LoRA reference " + name);
  const auto j = nlohmann::json::parse(in);
  LoraCase c;
  c.name = name;
  c.base = read_make_model_options(j.at("base"), name, "base", &c.vocab);

  const auto& a = j.at("adapter");
  c.adapter.rank = a.at("rank").get<uint32_t>();
  c.adapter.alpha = a.at("alpha").get<float>();
  c.adapter.seed = a.at("seed").get<uint64_t>();
  c.adapter.targets = a.at("targets").get<std::vector<std::string>>();
  const auto atype = gguf::type_from_name(a.at("type").get<std::string>());
  if (!atype) throw std::runtime_error(name + ": unknown adapter type");
  c.adapter.type = *atype;
  c.scale = j.value("scale", 1.0f);

  read_decoder_expected(j, name, c.base.file_type, c.expected);
  return c;
}

std::vector<uint8_t> lora_case_base_bytes(const LoraCase& c) {
  return make_model_bytes(c.base, c.vocab);
}

std::vector<uint8_t> lora_case_adapter_bytes(const LoraCase& c, const gguf::GgufFile& base) {
  gguf::GgufWriter w;
  model::build_random_lora(c.adapter, base, w);
  return w.serialize();
}

}  // namespace vkllm::reference
