#include "registry/model_name.h"

#include <gtest/gtest.h>

#include "registry/digest.h"
#include "registry/errors.h"

namespace vkllm::registry {
namespace {

TEST(ModelName, FillsOllamaDefaults) {
  auto n = ModelName::parse("llama3.2");
  EXPECT_EQ(n.host, "registry.ollama.ai");
  EXPECT_EQ(n.ns, "library");
  EXPECT_EQ(n.model, "llama3.2");
  EXPECT_EQ(n.tag, "latest");
  EXPECT_EQ(n.scheme, "https");
  EXPECT_EQ(n.full(), "registry.ollama.ai/library/llama3.2:latest");
  EXPECT_EQ(n.display(), "llama3.2:latest");
  EXPECT_EQ(n.repository(), "library/llama3.2");
}

TEST(ModelName, ParsesEveryPart) {
  auto n = ModelName::parse("user/m:7b");
  EXPECT_EQ(n.full(), "registry.ollama.ai/user/m:7b");
  EXPECT_EQ(n.display(), "user/m:7b");

  n = ModelName::parse("hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M");
  EXPECT_EQ(n.host, "hf.co");
  EXPECT_EQ(n.ns, "bartowski");
  EXPECT_EQ(n.model, "Qwen2.5-7B-Instruct-GGUF");
  EXPECT_EQ(n.tag, "Q4_K_M");
  EXPECT_EQ(n.display(), "hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M");

  // The ':' before the last '/' is a port, not a tag.
  n = ModelName::parse("localhost:5000/ns/m");
  EXPECT_EQ(n.host, "localhost:5000");
  EXPECT_EQ(n.tag, "latest");
  EXPECT_EQ(n.base_url(), "https://localhost:5000");

  n = ModelName::parse("http://localhost:5000/ns/m:t");
  EXPECT_EQ(n.scheme, "http");
  EXPECT_EQ(n.host, "localhost:5000");
  EXPECT_EQ(n.full(), "localhost:5000/ns/m:t");

  // Library models on the default host display without host and namespace; the default
  // namespace on another host keeps both.
  EXPECT_EQ(ModelName::parse("registry.ollama.ai/library/x:y").display(), "x:y");
  EXPECT_EQ(ModelName::parse("example.com/library/x").display(), "example.com/library/x:latest");
  EXPECT_EQ(ModelName::parse("Registry.Ollama.AI/Library/X").display(), "X:latest");
}

TEST(ModelName, ComparesCaseInsensitivelyButKeepsCase) {
  auto a = ModelName::parse("Llama3.2:Latest");
  auto b = ModelName::parse("llama3.2");
  EXPECT_EQ(a.model, "Llama3.2");
  EXPECT_TRUE(a.same_model(b));
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a.same_model(ModelName::parse("llama3.2:1b")));
}

TEST(ModelName, AcceptsLimitLengths) {
  EXPECT_NO_THROW(ModelName::parse(std::string(80, 'm') + ":" + std::string(80, 't')));
  EXPECT_NO_THROW(ModelName::parse(std::string(350, 'h') + "/" + std::string(80, 'n') + "/m"));
  EXPECT_NO_THROW(ModelName::parse("_x/a-b.c_d:e.f-g_h"));
}

class InvalidModelName : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidModelName, IsRejectedWithAClearError) {
  const std::string& text = GetParam();
  try {
    ModelName::parse(text);
    FAIL() << "accepted \"" << text << "\"";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_name);
    EXPECT_NE(std::string(e.what()).find("invalid model name"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ModelName::try_parse(text).has_value());
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, InvalidModelName,
    ::testing::Values("", ":", "x:", ":tag", "/x", "x/", "a//b", "h//m", "a/b/c/d", "a b", "model!",
                      "-model", ".model", "model:-tag", "ns.dot/model", std::string(81, 'm'),
                      "m:" + std::string(81, 't'), std::string(351, 'h') + "/n/m",
                      std::string("mo\0del", 6), "m\xc3\xa9", "ftp://host/ns/m"));

// The CVE-2024-37032 class: names (and digests) that would escape the store when used as path
// components.
INSTANTIATE_TEST_SUITE_P(PathTraversal, InvalidModelName,
                         ::testing::Values("..", "../x", "x/..", "../../etc/passwd", "ns/../m",
                                           "h/../m", "..:tag", "m:..", "/etc/passwd", "/abs/ns/m",
                                           "%2e%2e/m", "%2e%2e%2fm", "m%2f..", "ns\\..\\m",
                                           "..\\..\\x", "./m", "m/.", "h/ns/.", "~/m", "ns/m:t/..",
                                           "m:../../x", "registry.ollama.ai/../library/m"));

TEST(Digest, ParsesTheWireForm) {
  std::string hex(64, 'a');
  auto d = Digest::parse("sha256:" + hex);
  EXPECT_EQ(d.hex(), hex);
  EXPECT_EQ(d.str(), "sha256:" + hex);
  EXPECT_EQ(d.file_name(), "sha256-" + hex);
  EXPECT_EQ(d.short_hex(), hex.substr(0, 12));
  EXPECT_EQ(Digest::parse_file_name("sha256-" + hex), d);
  EXPECT_EQ(Digest::from_hex(hex), d);
}

TEST(Digest, HashesBytes) {
  EXPECT_EQ(Digest::of(std::string_view("abc")).hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Digest::of(std::string_view("")), Digest());
}

class InvalidDigest : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidDigest, IsRejected) {
  try {
    Digest::parse(GetParam());
    FAIL() << "accepted \"" << GetParam() << "\"";
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_digest);
  }
  EXPECT_FALSE(Digest::try_parse(GetParam()).has_value());
  EXPECT_THROW(Digest::parse_file_name(GetParam()), RegistryError);
}

INSTANTIATE_TEST_SUITE_P(
    Digests, InvalidDigest,
    ::testing::Values("", "sha256:", "sha256:" + std::string(63, 'a'),
                      "sha256:" + std::string(65, 'a'), "sha256:" + std::string(64, 'A'),
                      "sha256:" + std::string(63, 'a') + "g", "sha512:" + std::string(64, 'a'),
                      "SHA256:" + std::string(64, 'a'), std::string(64, 'a'),
                      "sha256:../../../../etc/passwd", "sha256:" + std::string(62, 'a') + "/.",
                      "sha256:" + std::string(63, 'a') + std::string(1, '\0'),
                      "sha256-" + std::string(63, 'a') + "/"));

TEST(Digest, ErrorNamesTheProblem) {
  try {
    Digest::parse("sha256:" + std::string(10, 'a') + "X" + std::string(53, 'a'));
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 10"), std::string::npos) << e.what();
  }
  try {
    Digest::parse("sha256:abc");
    FAIL();
  } catch (const RegistryError& e) {
    EXPECT_NE(std::string(e.what()).find("got 3"), std::string::npos) << e.what();
  }
}

TEST(Digest, FileNameFormIsOnlyForImports) {
  std::string hex(64, 'b');
  EXPECT_THROW(Digest::parse("sha256-" + hex), RegistryError);
  EXPECT_NO_THROW(Digest::parse_file_name("sha256:" + hex));
}

// What a blob directory's listing takes for a blob: the file-name form only.
TEST(Digest, TryParseFileNameTakesOnlyTheFileNameForm) {
  const std::string hex(64, 'c');
  EXPECT_EQ(Digest::try_parse_file_name("sha256-" + hex), Digest::from_hex(hex));
  for (const std::string& bad :
       {"sha256:" + hex, hex, "sha256-" + hex.substr(1), "sha256-" + hex + "x",
        "sha256-" + std::string(64, 'C'), std::string("sha256-"), std::string()})
    EXPECT_FALSE(Digest::try_parse_file_name(bad).has_value()) << bad;
}

}  // namespace
}  // namespace vkllm::registry
