#include "tests/reference/family_reference.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"

namespace vkllm::reference {

namespace fs = std::filesystem;

std::vector<std::string> family_case_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

FamilyCase load_family_case(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  if (!in) throw std::runtime_error("no family reference " + name);
  const auto j = nlohmann::json::parse(in);
  FamilyCase c;
  c.name = name;
  const auto& m = j.at("model");
  c.model.arch = m.at("arch").get<std::string>();
  c.model.shape = model::parse_model_shape(m.at("shape").get<std::string>());
  const auto type = model::file_type_from_name(m.at("type").get<std::string>());
  if (!type) throw std::runtime_error(name + ": unknown model type");
  c.model.file_type = *type;
  c.model.seed = m.at("seed").get<uint64_t>();
  c.vocab = shared_testdata_dir() / m.at("vocab").get<std::string>();
  c.embedding = j.at("kind").get<std::string>() == "embedding";

  LlamaCppCase& e = c.expected;
  e.name = name;
  e.prompt_text = j.at("prompt").get<std::string>();
  e.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  if (c.embedding) {
    c.embedding_values = j.at("embedding").get<std::vector<float>>();
  } else {
    e.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
    e.greedy_margins = j.at("greedy_margins").get<std::vector<float>>();
    e.last_logits = j.at("last_logits").get<std::vector<float>>();
  }
  e.quantized = model::is_quantized(c.model.file_type);
  e.min_cosine = e.quantized ? 0.999 : 0.9999;
  return c;
}

std::vector<uint8_t> family_case_model_bytes(const FamilyCase& c) {
  const auto vocab = gguf::GgufFile::open(c.vocab);
  gguf::GgufWriter w;
  model::build_random_model(c.model, vocab, w);
  return w.serialize();
}

}  // namespace vkllm::reference
