#include "tests/reference/model_reference.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/projector_maker.h"

namespace vkllm::reference {

namespace fs = std::filesystem;

std::vector<std::string> model_case_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

model::MakeModelOptions read_make_model_options(const nlohmann::json& m, const std::string& name,
                                                const std::string& what, fs::path* vocab) {
  model::MakeModelOptions o;
  o.arch = m.at("arch").get<std::string>();
  o.shape = model::parse_model_shape(m.at("shape").get<std::string>());
  const auto type = model::file_type_from_name(m.at("type").get<std::string>());
  if (!type) throw std::runtime_error(name + ": unknown " + what + " type");
  o.file_type = *type;
  o.seed = m.at("seed").get<uint64_t>();
  o.stacked_experts = m.value("stacked_experts", false);  // make-model --stacked-experts
  o.nextn_layers = m.value("mtp", false) ? 1 : 0;         // make-model --mtp
  // A vocabulary committed beside its references ("tests/reference/unigram/...") is in the
  // source tree; the others are in ../shared/testdata.
  const auto vocab_name = m.at("vocab").get<std::string>();
  *vocab = vocab_name.starts_with("tests/") ? fs::path(VKLLM_SOURCE_DIR) / vocab_name
                                            : shared_testdata_dir() / vocab_name;
  return o;
}

namespace {

void read_prompt(const nlohmann::json& j, const std::string& name, model::FileType type,
                 LlamaCppCase& e) {
  e.name = name;
  e.prompt_text = j.at("prompt").get<std::string>();
  e.prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
  e.quantized = model::is_quantized(type);
  e.min_cosine = e.quantized ? 0.999 : 0.9999;
}

}  // namespace

void read_decoder_expected(const nlohmann::json& j, const std::string& name, model::FileType type,
                           LlamaCppCase& e) {
  read_prompt(j, name, type, e);
  e.greedy_tokens = j.at("greedy_tokens").get<std::vector<int32_t>>();
  e.greedy_margins = j.at("greedy_margins").get<std::vector<float>>();
  e.last_logits = j.at("last_logits").get<std::vector<float>>();
}

ModelCase load_model_case(const fs::path& dir, const std::string& name) {
  std::ifstream in(dir / (name + ".json"));
  if (!in) throw std::runtime_error("no model reference " + name);
  const auto j = nlohmann::json::parse(in);
  ModelCase c;
  c.name = name;
  c.model = read_make_model_options(j.at("model"), name, "model", &c.vocab);
  c.embedding = j.value("kind", std::string("decoder")) == "embedding";
  if (c.embedding) {
    read_prompt(j, name, c.model.file_type, c.expected);
    c.embedding_values = j.at("embedding").get<std::vector<float>>();
  } else {
    read_decoder_expected(j, name, c.model.file_type, c.expected);
  }
  return c;
}

std::vector<uint8_t> make_model_bytes(const model::MakeModelOptions& options,
                                      const fs::path& vocab_path) {
  const auto vocab = gguf::GgufFile::open(vocab_path);
  gguf::GgufWriter w;
  model::build_random_model(options, vocab, w);
  return w.serialize();
}

std::vector<uint8_t> make_pixtral_projector_bytes(const model::MakeModelOptions& options,
                                                  const fs::path& vocab_path,
                                                  std::string_view projector_shape) {
  const auto vocab = gguf::GgufFile::open(vocab_path);
  gguf::GgufWriter text;
  model::build_random_model(options, vocab, text);
  model::MakeProjectorOptions po;
  po.arch = "mistral3";
  po.shape = model::parse_projector_shape(projector_shape, po.arch);
  po.text_embd = options.shape.n_embd;
  po.f32 = options.file_type == model::FileType::F32;
  po.seed = options.seed;
  po.img_break = model::img_break_embedding(text);
  gguf::GgufWriter w;
  model::build_random_projector(po, w);
  return w.serialize();
}

std::vector<uint8_t> model_case_bytes(const ModelCase& c) {
  return make_model_bytes(c.model, c.vocab);
}

}  // namespace vkllm::reference
