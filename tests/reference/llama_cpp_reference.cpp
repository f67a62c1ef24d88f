#include "tests/reference/llama_cpp_reference.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace vkllm::reference {

namespace fs = std::filesystem;

fs::path shared_testdata_dir() {
  return fs::path(VKLLM_SHARED_DIR) / "testdata";
}

std::vector<std::string> llama_cpp_case_names() {
  std::vector<std::string> names;
  const fs::path dir = shared_testdata_dir() / "reference";
  if (!fs::exists(dir)) return names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    const std::string stem = e.path().stem().string();  // model.prompt
    const std::string model = stem.substr(0, stem.rfind('.'));
    if (fs::exists(shared_testdata_dir() / "models" / (model + ".gguf"))) names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

LlamaCppCase load_llama_cpp_case(const std::string& name) {
  const fs::path dir = shared_testdata_dir();
  std::ifstream in(dir / "reference" / (name + ".json"));
  if (!in) throw std::runtime_error("no reference " + name);
  const auto j = nlohmann::json::parse(in);
  LlamaCppCase c;
  c.name = name;
  const std::string model = name.substr(0, name.rfind('.'));
  const std::string prompt = name.substr(name.rfind('.') + 1);
  c.model_path = dir / "models" / (model + ".gguf");
  std::ifstream p(dir / "reference" / (prompt + ".txt"), std::ios::binary);
  std::stringstream ss;
  ss << p.rdbuf();
  c.prompt_text = ss.str();
  c.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  c.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
  c.greedy_margins = j.at("greedy_margins").get<std::vector<float>>();
  c.last_logits = j.at("last_logits").get<std::vector<float>>();
  const bool quantized =
      model.find("q4") != std::string::npos || model.find("q8") != std::string::npos ||
      model.find("q5") != std::string::npos || model.find("q6") != std::string::npos;
  c.min_cosine = quantized ? 0.999 : 0.9999;
  c.quantized = quantized;
  return c;
}

float near_tie_margin(const LlamaCppCase& c, double diff) {
  return c.quantized ? std::max<float>(kNearTieMargin, static_cast<float>(2 * diff))
                     : kNearTieMargin;
}

double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
}

}  // namespace vkllm::reference
