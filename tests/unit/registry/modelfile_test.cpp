#include "registry/modelfile.h"

#include <gtest/gtest.h>

#include "registry/errors.h"
#include "registry/go_json.h"
#include "registry/parameters.h"

namespace vkllm::registry {
namespace {

std::string error_of(std::string_view text) {
  try {
    Modelfile::parse(text);
  } catch (const RegistryError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
    return e.what();
  }
  return "(no error)";
}

TEST(Modelfile, ParsesEveryInstruction) {
  auto file = Modelfile::parse(
      "# a comment\n"
      "from llama3.2\n"
      "\n"
      "  PARAMETER temperature 0.6\n"
      "Parameter stop <|eot_id|>\n"
      "PARAMETER stop \"</s>\"\n"
      "TEMPLATE \"\"\"{{ if .System }}<|system|>\n"
      "{{ .System }}\"{{ end }}\n"
      "{{ .Prompt }}\"\"\"\n"
      "SYSTEM \"You are\n"
      "  helpful.\"\n"
      "ADAPTER ./lora.gguf\n"
      "LICENSE MIT   \n"
      "MESSAGE user Is # a comment here?\n"
      "MESSAGE assistant \"\"\n"
      "REQUIRES 0.14.0\n");
  const auto& c = file.commands;
  ASSERT_EQ(c.size(), 11u);
  EXPECT_EQ(c[0].name, "from");
  EXPECT_EQ(c[0].value, "llama3.2");
  EXPECT_EQ(c[0].line, 2);
  EXPECT_EQ(c[1].name, "parameter");
  EXPECT_EQ(c[1].key, "temperature");
  EXPECT_EQ(c[1].value, "0.6");
  EXPECT_EQ(c[2].value, "<|eot_id|>");
  EXPECT_EQ(c[3].value, "</s>");
  EXPECT_EQ(c[4].name, "template");
  EXPECT_EQ(c[4].value, "{{ if .System }}<|system|>\n{{ .System }}\"{{ end }}\n{{ .Prompt }}");
  EXPECT_EQ(c[4].line, 7);
  EXPECT_EQ(c[5].value, "You are\n  helpful.");
  EXPECT_EQ(c[5].line, 10);
  EXPECT_EQ(c[6].name, "adapter");
  EXPECT_EQ(c[7].value, "MIT");
  EXPECT_EQ(c[8].name, "message");
  EXPECT_EQ(c[8].key, "user");
  EXPECT_EQ(c[8].value, "Is # a comment here?");
  EXPECT_EQ(c[9].key, "assistant");
  EXPECT_EQ(c[9].value, "");
  EXPECT_EQ(c[10].name, "requires");
  EXPECT_EQ(c[10].line, 16);
}

TEST(Modelfile, HandlesBomsAndCrlf) {
  auto file = Modelfile::parse(
      "\xef\xbb\xbf"
      "FROM a\r\nSYSTEM x\r\nFROM b\r\n");
  ASSERT_EQ(file.commands.size(), 3u);
  EXPECT_EQ(file.commands[1].value, "x");
  EXPECT_EQ(file.commands[2].line, 3);
  // UTF-16LE with BOM: "FROM é\n"
  std::string utf16(
      "\xff\xfe"
      "F\0R\0O\0M\0 \0\xe9\0\n\0",
      16);
  file = Modelfile::parse(utf16);
  ASSERT_EQ(file.commands.size(), 1u);
  EXPECT_EQ(file.commands[0].value, "\xc3\xa9");
}

TEST(Modelfile, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("FROM x\n\nFOO bar\n"),
            "(line 3): command must be one of \"from\", \"license\", \"template\", \"system\", "
            "\"adapter\", \"draft\", \"renderer\", \"parser\", \"parameter\", \"message\", or "
            "\"requires\"");
  EXPECT_EQ(error_of("FROM x\nMESSAGE tool hi\n"),
            "(line 2): message role must be one of \"system\", \"user\", or \"assistant\"");
  EXPECT_EQ(error_of("SYSTEM hi\n"), "no FROM line");
  EXPECT_EQ(error_of(""), "no FROM line");
  std::string eof = error_of("FROM x\nPARAMETER a 1\nTEMPLATE \"\"\"abc\n\ndef\n");
  EXPECT_TRUE(eof.starts_with("(line 3): unexpected EOF")) << eof;
  EXPECT_TRUE(
      error_of("FROM x\nPARAMETER te-mp 1\n").starts_with("(line 2): invalid character '-'"));
  EXPECT_TRUE(error_of("FROM x\nPARAMETER stop\n").starts_with("(line 2): "))
      << error_of("FROM x\nPARAMETER stop\n");
  EXPECT_TRUE(error_of("FROM x\nSYSTEM\n").starts_with("(line 2): command must be"));
  EXPECT_TRUE(error_of("FROM x\nSYS1EM hi\n").starts_with("(line 2): command must be"));
}

TEST(Modelfile, QuotesLikeOllama) {
  EXPECT_EQ(modelfile_quote("<|eot_id|>"), "<|eot_id|>");
  EXPECT_EQ(modelfile_quote("{{ .Prompt }}"), "{{ .Prompt }}");
  EXPECT_EQ(modelfile_quote(" lead"), "\" lead\"");
  EXPECT_EQ(modelfile_quote("trail "), "\"trail \"");
  EXPECT_EQ(modelfile_quote("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(modelfile_quote("say \"hi\"\nok"), "\"\"\"say \"hi\"\nok\"\"\"");
  EXPECT_EQ(modelfile_quote("say \"hi\""), "say \"hi\"");
}

TEST(Modelfile, RendersAndReparsesToTheSameCommands) {
  std::string text =
      "FROM /models/blobs/sha256-abc\n"
      "TEMPLATE \"\"\"{{ .System }}\n\"quoted\" {{ .Prompt }}\"\"\"\n"
      "SYSTEM \" padded \"\n"
      "PARAMETER stop <|eot_id|>\n"
      "PARAMETER num_ctx 4096\n"
      "LICENSE \"line one\nline two\"\n"
      "MESSAGE user hello there\n"
      "MESSAGE assistant \"hi\n\"\n";
  auto file = Modelfile::parse(text);
  std::string rendered = file.to_string();
  EXPECT_EQ(rendered, text);
  auto again = Modelfile::parse(rendered);
  ASSERT_EQ(again.commands.size(), file.commands.size());
  for (size_t i = 0; i < file.commands.size(); ++i) {
    EXPECT_EQ(again.commands[i].name, file.commands[i].name);
    EXPECT_EQ(again.commands[i].key, file.commands[i].key);
    EXPECT_EQ(again.commands[i].value, file.commands[i].value);
  }
}

TEST(Modelfile, BuildsTheCreateRequest) {
  auto r = Modelfile::parse(
               "FROM ./model.gguf\nFROM ./mmproj.gguf\nADAPTER lora.gguf\nPARAMETER stop a\n"
               "PARAMETER num_ctx 4096\nPARAMETER stop b\nPARAMETER mirostat 1\nLICENSE one\n"
               "LICENSE two\nMESSAGE user q\nMESSAGE assistant a\nSYSTEM s\nREQUIRES v0.14.0\n")
               .to_request();
  EXPECT_EQ(r.from, (std::vector<std::string>{"./model.gguf", "./mmproj.gguf"}));
  EXPECT_EQ(r.adapters, std::vector<std::string>{"lora.gguf"});
  EXPECT_EQ(r.parameters.dump(), R"({"stop":["a","b"],"num_ctx":4096})");
  EXPECT_EQ(r.licenses, (std::vector<std::string>{"one", "two"}));
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[1], (std::pair<std::string, std::string>{"assistant", "a"}));
  EXPECT_EQ(r.system, "s");
  EXPECT_FALSE(r.template_text);
  EXPECT_EQ(r.requires_version, "0.14.0");

  auto error = [](const char* text) {
    try {
      Modelfile::parse(text).to_request();
    } catch (const RegistryError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("FROM x\n\nPARAMETER num_ctx big\n"), "(line 3): invalid int value [big]");
  EXPECT_EQ(error("FROM x\nPARAMETER bogus 1\n"), "(line 2): unknown parameter 'bogus'");
  EXPECT_EQ(error("FROM x\nREQUIRES 0.14\n"), "(no error)");
  EXPECT_EQ(error("FROM x\nREQUIRES 1.2.3-rc.1+build.5\n"), "(no error)");
  for (const char* bad : {"FROM x\nREQUIRES latest\n", "FROM x\nREQUIRES 01.2.3\n",
                          "FROM x\nREQUIRES 1.2-rc1\n", "FROM x\nREQUIRES 1.2.3.4\n"})
    EXPECT_EQ(error(bad), "(line 2): requires must be a valid semver (e.g. 0.14.0)") << bad;
}

TEST(Parameters, TypesValuesByOption) {
  auto params = typed_parameters({{"temperature", "0.7"},
                                  {"num_ctx", "8192"},
                                  {"stop", "<|eot_id|>"},
                                  {"stop", "</s>"},
                                  {"use_mmap", "false"},
                                  {"mirostat", "2"}});
  EXPECT_EQ(params.dump(),
            R"({"temperature":0.7,"num_ctx":8192,"stop":["<|eot_id|>","</s>"],"use_mmap":false})");
  auto message = [](std::vector<std::pair<std::string, std::string>> raw) {
    try {
      typed_parameters(raw);
    } catch (const RegistryError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message({{"nonsense", "1"}}), "unknown parameter 'nonsense'");
  EXPECT_EQ(message({{"num_ctx", "4k"}}), "invalid int value [4k]");
  EXPECT_EQ(message({{"num_ctx", "1.5"}}), "invalid int value [1.5]");
  EXPECT_EQ(message({{"top_p", "high"}}), "invalid float value [high]");
  EXPECT_EQ(message({{"use_mmap", "yes"}}), "invalid bool value [yes]");
}

TEST(Parameters, NormalizesCreateJsonAndMerges) {
  auto p = normalize_parameters(nlohmann::ordered_json::parse(
      R"({"num_ctx":4096.9,"stop":"x","temperature":0.5,"custom":"kept","mirostat":1,"seed":null})"));
  EXPECT_EQ(p.dump(), R"({"num_ctx":4096,"stop":["x"],"temperature":0.5,"custom":"kept"})");
  EXPECT_THROW(normalize_parameters(nlohmann::ordered_json::parse(R"({"num_ctx":"big"})")),
               RegistryError);
  EXPECT_THROW(normalize_parameters(nlohmann::ordered_json::parse(R"({"stop":[1]})")),
               RegistryError);
  auto merged = merge_parameters(nlohmann::ordered_json::parse(R"({"a":1,"b":2})"),
                                 nlohmann::ordered_json::parse(R"({"b":3,"c":4})"));
  EXPECT_EQ(merged.dump(), R"({"a":1,"b":3,"c":4})");
}

TEST(Parameters, RefusesOutOfRangeValuesAndBadNames) {
  auto json_error = [](const char* text) {
    try {
      normalize_parameters(nlohmann::ordered_json::parse(text));
    } catch (const RegistryError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_input);
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // What used to be stored as -9.22e18, a negative context, and a nameless parameter.
  EXPECT_EQ(json_error(R"({"num_ctx":1e308})"),
            "invalid int value [1e+308]: num_ctx must be between 1 and 2147483647");
  EXPECT_EQ(json_error(R"({"num_ctx":1180591620717411303424})").rfind("invalid int value [", 0),
            0u);
  EXPECT_EQ(json_error(R"({"num_ctx":-1})"),
            "invalid int value [-1]: num_ctx must be between 1 and 2147483647");
  EXPECT_EQ(json_error(R"({"":1})"), "unknown parameter ''");
  EXPECT_EQ(json_error("{\"a\\u0000b\":1}").rfind("unknown parameter '", 0), 0u);
  EXPECT_EQ(json_error(R"({"top_p":1.5})"),
            "invalid float value [1.5]: top_p must be between 0 and 1");
  EXPECT_EQ(json_error(R"({"temperature":1e39})").rfind("invalid float value [1e+39]", 0), 0u);
  EXPECT_EQ(json_error(R"({"seed":9223372036854775807,"num_predict":-1,"num_gpu":-1})"),
            "(no error)");
  EXPECT_EQ(json_error(R"({"seed":18446744073709551615})").rfind("invalid int value [", 0), 0u);
  EXPECT_EQ(json_error(R"({"seed":9.3e18})").rfind("invalid int value [", 0), 0u);
  // The Modelfile path applies the same ranges.
  EXPECT_THROW(typed_parameters({{"num_ctx", "-1"}}), RegistryError);
  EXPECT_THROW(typed_parameters({{"num_ctx", "99999999999"}}), RegistryError);
  EXPECT_THROW(typed_parameters({{"temperature", "-0.5"}}), RegistryError);
  EXPECT_NO_THROW(typed_parameters({{"num_ctx", "2048"}, {"temperature", "0"}}));
}

TEST(GoFormatting, MatchesGoPercentV) {
  using nlohmann::ordered_json;
  EXPECT_EQ(go_format_value(ordered_json(0.6)), "0.6");
  EXPECT_EQ(go_format_value(ordered_json(40)), "40");
  EXPECT_EQ(go_format_value(ordered_json(131072)), "131072");
  EXPECT_EQ(go_format_value(ordered_json(1000000)), "1e+06");
  EXPECT_EQ(go_format_value(ordered_json(1234567.0)), "1.234567e+06");
  EXPECT_EQ(go_format_value(ordered_json(0.0001)), "0.0001");
  EXPECT_EQ(go_format_value(ordered_json(0.00001)), "1e-05");
  EXPECT_EQ(go_format_value(ordered_json(-1)), "-1");
  EXPECT_EQ(go_format_value(ordered_json(true)), "true");
  EXPECT_EQ(go_format_value(ordered_json("</s>")), "</s>");
  EXPECT_EQ(go_format_value_sharp(ordered_json("</s>")), "\"</s>\"");
  EXPECT_EQ(go_format_value_sharp(ordered_json("a\"b\n")), "\"a\\\"b\\n\"");
  EXPECT_EQ(go_json_dump(ordered_json::parse(R"({"stop":["<|eot_id|>","a&b"]})")),
            R"({"stop":["\u003c|eot_id|\u003e","a\u0026b"]})");
}

}  // namespace
}  // namespace vkllm::registry
