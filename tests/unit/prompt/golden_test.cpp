// Ollama's own template test data (../shared/testdata/ollama-templates): every case renders
// byte-identical, and every templates.jsonl chat_template detects its named template.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/prompt/prompt.h"
#include "tests/support/file_text.h"

namespace fs = std::filesystem;
using namespace vkllm::prompt;

namespace {

const fs::path kDir = fs::path(VKLLM_SHARED_DIR) / "testdata" / "ollama-templates";

std::string lf(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!(s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')) out += s[i];
  return out;
}

std::vector<Message> case_messages(const std::string& name) {
  std::vector<Message> m;
  if (name.starts_with("system-"))
    m.push_back({"system", "You are a helpful assistant.", "", {}, {}, "", ""});
  m.push_back({"user", "Hello, how are you?", "", {}, {}, "", ""});
  if (name.find("user-assistant-user") != std::string::npos) {
    m.push_back({"assistant", "I'm doing great. How can I help you today?", "", {}, {}, "", ""});
    m.push_back({"user", "I'd like to show off how chat templating works!", "", {}, {}, "", ""});
  }
  return m;
}

}  // namespace

TEST(OllamaTemplates, EveryCaseRendersByteIdentical) {
  const std::set<std::string> strip_space = {"chatqa", "llama2-chat", "mistral-instruct",
                                             "openchat", "vicuna"};
  int cases = 0, passed = 0;
  for (const auto& dir : fs::directory_iterator(kDir / "testdata")) {
    if (!dir.is_directory()) continue;
    std::string file = dir.path().filename().string();  // "<name>.gotmpl"
    std::string name = file.substr(0, file.size() - 7);
    // The embedded copy must equal the test data (CRLF normalised).
    auto embedded = named_template_text(name);
    ASSERT_TRUE(embedded) << name;
    EXPECT_EQ(*embedded, lf(vkllm::test::file_text(kDir / file))) << name;
    ModelPrompt mp;
    mp.template_text = *embedded;
    PromptBuilder b(mp);
    for (const auto& c : fs::directory_iterator(dir.path())) {
      ++cases;
      std::string want = vkllm::test::file_text(c.path());
      ChatInput in;
      in.messages = case_messages(c.path().filename().string());
      std::string got = b.render_chat(in, 4096, {}).text;
      if (strip_space.count(name) && got.ends_with(" ") && !got.ends_with("  ")) got.pop_back();
      EXPECT_EQ(got, want) << name << "/" << c.path().filename().string();
      if (got == want) ++passed;
    }
  }
  EXPECT_EQ(cases, 60);
  std::printf("golden cases byte-identical: %d/%d\n", passed, cases);
}

TEST(OllamaTemplates, TemplatesJsonlDetection) {
  std::ifstream f(kDir / "testdata" / "templates.jsonl");
  std::string line;
  int total = 0, ok = 0;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    ASSERT_EQ(j.size(), 1u);
    std::string want = j.begin().key();
    auto got = detect_named_template(j.begin().value().get<std::string>());
    ++total;
    EXPECT_EQ(got.value_or("<none>"), want);
    if (got && *got == want) {
      ++ok;
      auto text = named_template_text(*got);
      ASSERT_TRUE(text);
      EXPECT_FALSE(check_template(*text)) << *got;
      EXPECT_FALSE(text->empty());
    }
  }
  EXPECT_EQ(total, 35);
  std::printf("templates.jsonl detections correct: %d/%d\n", ok, total);
}

TEST(OllamaTemplates, DetectionRejectsUnrelatedTemplates) {
  EXPECT_FALSE(detect_named_template(""));
  EXPECT_FALSE(detect_named_template(std::string(3000, 'x')));
  EXPECT_FALSE(
      detect_named_template("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"));
}

TEST(OllamaTemplates, NamedParameters) {
  auto p = named_template_parameters("gemma3-instruct");
  EXPECT_EQ(p["stop"], nlohmann::ordered_json::array({"<end_of_turn>"}));
  EXPECT_EQ(p["temperature"], 0.1);
  EXPECT_EQ(named_template_parameters("chatml")["stop"][0], "<|im_start|>");
  EXPECT_TRUE(named_template_parameters("nope").empty());
  EXPECT_FALSE(named_template_text("nope"));
  EXPECT_FALSE(named_template_text("../index"));
}

TEST(OllamaTemplates, BuilderFallsBackToDetectedTemplate) {
  auto index = nlohmann::json::parse(vkllm::test::file_text(kDir / "index.json"));
  ModelPrompt mp;
  mp.gguf_chat_template = index[0]["template"].get<std::string>();  // chatml
  PromptBuilder b(mp);
  EXPECT_EQ(b.detected_template(), "chatml");
  EXPECT_EQ(b.template_text(), *named_template_text("chatml"));
  EXPECT_EQ(b.default_parameters()["stop"][1], "<|im_end|>");
  ChatInput in;
  in.messages = {{"user", "hi", "", {}, {}, "", ""}};
  EXPECT_EQ(b.render_chat(in, 4096, {}).text,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");

  ModelPrompt none;
  none.gguf_chat_template = "something else entirely";
  PromptBuilder d(none);
  EXPECT_EQ(d.detected_template(), "");
  EXPECT_EQ(d.template_text(), "{{ .Prompt }}");
  EXPECT_TRUE(d.default_parameters().empty());
}
