// A model's capabilities from the one function /api/show, /api/tags and generation's checks share
// (models::capabilities_of): the config's, the GGUF's, the template in use, the family's.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "server/models/model_facts.h"

using namespace vkllm;
using Names = std::vector<std::string>;

namespace {

registry::ModelShow show_with(std::optional<std::string> template_text) {
  registry::ModelShow m;
  m.template_text = std::move(template_text);
  return m;
}

models::GgufSummary gguf(std::string architecture, Names capabilities) {
  models::GgufSummary g;
  g.architecture = std::move(architecture);
  g.capabilities = std::move(capabilities);
  return g;
}

TEST(ModelCapabilities, TheTemplateInUseGivesToolsInsertAndThinking) {
  const auto g = gguf("llama", {"completion"});
  const auto plain = models::capabilities_of(show_with("{{ .Prompt }}"), &g);
  EXPECT_EQ(plain.names, Names{"completion"});
  EXPECT_TRUE(plain.generates());
  const auto fim = models::capabilities_of(
      show_with("{{ if .Tools }}{{ .Tools }}{{ end }}<pre>{{ .Prompt }}<suf>{{ .Suffix }}"), &g);
  EXPECT_EQ(fim.names, (Names{"completion", "tools", "insert"}));
  // Thinking needs tags the output parser can find around .Thinking, not the word alone.
  const std::string qwen3 =
      "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ if .Thinking }}<think>{{ .Thinking "
      "}}</think>{{ end }}{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n";
  EXPECT_EQ(models::capabilities_of(show_with(qwen3), &g).names, (Names{"completion", "thinking"}));
}

TEST(ModelCapabilities, HarmonyAndTheGptOssFamily) {
  const auto g = gguf("llama", {"completion"});
  auto harmony = show_with("{{ .Prompt }}");
  harmony.renderer = "harmony";
  harmony.parser = "harmony";
  EXPECT_EQ(models::capabilities_of(harmony, &g).names, (Names{"completion", "tools", "thinking"}));
  // A gpt-oss GGUF without a template renders Harmony; with a plain TEMPLATE it still thinks.
  const auto oss = gguf("gpt-oss", {"completion"});
  EXPECT_EQ(models::capabilities_of(show_with(std::nullopt), &oss).names,
            (Names{"completion", "tools", "thinking"}));
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &oss).names,
            (Names{"completion", "thinking"}));
}

TEST(ModelCapabilities, AGemma3ModelWithAProjectorListsVision) {
  auto m = show_with("{{ .Prompt }}");
  m.projectors.push_back(registry::Digest());
  const auto g = gguf("gemma3", {"completion"});
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion", "vision"}));
  EXPECT_EQ(caps.not_run, Names{});
  // A tower inside the GGUF (Ollama's single-file layout) runs when the encoders read it
  // (inline_projector names it); a vision key alone (a tower of another kind) is not run.
  auto embedded = gguf("gemma3", {"completion", "vision"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &embedded).not_run,
            Names{"vision"});
  embedded.inline_projector = "gemma3";
  const auto inside = models::capabilities_of(show_with("{{ .Prompt }}"), &embedded);
  EXPECT_EQ(inside.names, (Names{"completion", "vision"}));
  EXPECT_EQ(inside.not_run, Names{});
  EXPECT_TRUE(models::model_prompt(show_with("{{ .Prompt }}"), &embedded).has_projector);
}

TEST(ModelCapabilities, AMistral3ModelWithAProjectorListsVision) {
  auto m = show_with("{{ .Prompt }}");
  m.projectors.push_back(registry::Digest());  // its Pixtral projector layer
  const auto g = gguf("mistral3", {"completion"});
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion", "vision"}));
  EXPECT_EQ(caps.not_run, Names{});
  // Ollama's own mistral3 file carries the tower inside: not run.
  const auto embedded = gguf("mistral3", {"completion", "vision"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &embedded).not_run,
            Names{"vision"});
}

TEST(ModelCapabilities, AQwen25VlModelWithAProjectorListsVision) {
  auto m = show_with("{{ .Prompt }}");
  m.projectors.push_back(registry::Digest());  // its Qwen2.5-VL projector layer
  const auto g = gguf("qwen2vl", {"completion"});
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion", "vision"}));
  EXPECT_EQ(caps.not_run, Names{});
  // Ollama's qwen25vl file (read as qwen2vl) carries its tower inside: run when inline_projector
  // names it (the encoders read it), not when only its vision keys show.
  auto embedded = gguf("qwen2vl", {"completion", "vision"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &embedded).not_run,
            Names{"vision"});
  embedded.inline_projector = "qwen25vl";
  const auto inside = models::capabilities_of(show_with("{{ .Prompt }}"), &embedded);
  EXPECT_EQ(inside.names, (Names{"completion", "vision"}));
  EXPECT_EQ(inside.not_run, Names{});
}

// Gemma 4 runs its gemma4v projector layer, and the tower inside Ollama's single file when
// inline_projector names it; its audio conformer is set aside either way.
TEST(ModelCapabilities, AGemma4ModelWithAProjectorListsVision) {
  auto m = show_with("{{ .Prompt }}");
  m.projectors.push_back(registry::Digest());
  const auto g = gguf("gemma4", {"completion"});
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion", "vision"}));
  EXPECT_EQ(caps.not_run, Names{});
  auto embedded = gguf("gemma4", {"completion", "vision", "audio"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &embedded).not_run,
            (Names{"vision", "audio"}));
  embedded.inline_projector = "gemma4";
  const auto inside = models::capabilities_of(show_with("{{ .Prompt }}"), &embedded);
  EXPECT_EQ(inside.names, (Names{"completion", "vision"}));
  EXPECT_EQ(inside.not_run, Names{"audio"});
}

TEST(ModelCapabilities, AQwen3VlModelWithAProjectorListsVision) {
  auto m = show_with("{{ .Prompt }}");
  m.projectors.push_back(registry::Digest());  // its Qwen3-VL projector layer
  const auto g = gguf("qwen3vl", {"completion"});
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion", "vision"}));
  EXPECT_EQ(caps.not_run, Names{});
  // Ollama's own qwen3vl file carries the tower inside: run when inline_projector names it.
  auto embedded = gguf("qwen3vl", {"completion", "vision"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &embedded).not_run,
            Names{"vision"});
  embedded.inline_projector = "qwen3vl";
  const auto inside = models::capabilities_of(show_with("{{ .Prompt }}"), &embedded);
  EXPECT_EQ(inside.names, (Names{"completion", "vision"}));
  EXPECT_EQ(inside.not_run, Names{});
}

TEST(ModelCapabilities, ConfigFirstThenWeightsAndAProjectorsVisionIsNotListedWhileNoEncoderRuns) {
  auto m = show_with("{{ .Prompt }}");
  m.config = nlohmann::ordered_json::parse(R"({"capabilities":["vision","completion",7]})");
  m.projectors.push_back(registry::Digest());
  const auto g = gguf("llama", {"completion"});
  // Vision (from the config and the projector) of a llama model is what the engine cannot run:
  // not listed, so no client offers images; kept aside for the refusal's message.
  const auto caps = models::capabilities_of(m, &g);
  EXPECT_EQ(caps.names, (Names{"completion"}));
  EXPECT_EQ(caps.not_run, (Names{"vision"}));
  EXPECT_EQ(models::capabilities_of(show_with("{{ .Prompt }}"), &g).not_run, Names{});
}

TEST(ModelCapabilities, EmbeddingModelsDoNotGenerateAndUnreadWeightsAreNotRefused) {
  const auto bert = gguf("bert", {"embedding", "rerank"});
  const auto reranker = models::capabilities_of(show_with(std::nullopt), &bert);
  EXPECT_EQ(reranker.names, (Names{"embedding", "rerank"}));
  EXPECT_FALSE(reranker.generates());
  EXPECT_TRUE(reranker.from_weights);
  // Weights not read: generation goes on to the load, which says what is wrong with them.
  const auto unread = models::capabilities_of(show_with("{{ .Prompt }}"), nullptr);
  EXPECT_TRUE(unread.names.empty());
  EXPECT_FALSE(unread.from_weights);
  EXPECT_TRUE(unread.generates());
}

TEST(ModelCapabilities, ATemplateThatDoesNotParseBringsNone) {
  const auto g = gguf("llama", {"completion"});
  EXPECT_EQ(models::capabilities_of(show_with("{{ if .Tools }}"), &g).names, Names{"completion"});
}

}  // namespace
