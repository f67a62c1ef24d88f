// `vkllm tokenize` and `vkllm detokenize`: the model's tokenizer from the command line, for
// checking prompts and token ids against other implementations.
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/cli/commands.h"

namespace vkllm::cli {
namespace {

std::unique_ptr<tokenizer::Tokenizer> load_tokenizer(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::runtime_error("cannot open model '" + path + "': no such file");
  }
  return tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(path));
}

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool no_bos = false;
  bool no_special = false;
  bool lines = false;
};

struct DetokenizeOptions {
  std::string model;
  std::vector<int32_t> ids;
  bool render_special = false;
};

}  // namespace

void add_tokenizer_commands(CLI::App& app) {
  auto tok_opts = std::make_shared<TokenizeOptions>();
  CLI::App* tokenize = app.add_subcommand(
      "tokenize",
      "Print the token ids of a text as JSON ({\"ids\":[...]}) with a model's tokenizer");
  tokenize->add_option("--model", tok_opts->model, "GGUF model (or vocabulary) file")->required();
  tokenize->add_flag("--no-bos", tok_opts->no_bos,
                     "Do not add the BOS/EOS tokens the model asks for");
  tokenize->add_flag("--no-special", tok_opts->no_special,
                     "Treat special-token text such as <|eot_id|> as plain text");
  tokenize->add_flag("--lines", tok_opts->lines,
                     "Tokenize each line of the text on its own and print one JSON object per "
                     "line (many texts checked against another tokenizer with one load)");
  tokenize->add_option("text", tok_opts->text, "The text, or - to read it from stdin")->required();
  tokenize->callback([tok_opts] {
    run_command([&] {
      std::string text = tok_opts->text;
      if (text == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      }
      const auto tok = load_tokenizer(tok_opts->model);
      const auto print = [&](const std::string& t) {
        const auto ids = tok->encode(t, !tok_opts->no_bos, !tok_opts->no_special);
        std::cout << nlohmann::json{{"ids", ids}}.dump() << "\n";
      };
      if (!tok_opts->lines) {
        print(text);
        return 0;
      }
      if (!text.empty() && text.back() == '\n') text.pop_back();  // no empty last line
      for (size_t start = 0;;) {
        const size_t end = text.find('\n', start);
        print(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) break;
        start = end + 1;
      }
      return 0;
    });
  });

  auto detok_opts = std::make_shared<DetokenizeOptions>();
  CLI::App* detokenize =
      app.add_subcommand("detokenize", "Print the text of token ids with a model's tokenizer");
  detokenize->add_option("--model", detok_opts->model, "GGUF model (or vocabulary) file")
      ->required();
  detokenize->add_flag("--special", detok_opts->render_special,
                       "Print control tokens (BOS, <|eot_id|>, ...) as their text");
  detokenize->add_option("ids", detok_opts->ids, "Token ids")->required();
  detokenize->callback([detok_opts] {
    run_command([&] {
      const auto tok = load_tokenizer(detok_opts->model);
      std::cout << tok->decode(detok_opts->ids, detok_opts->render_special);
      std::cout.flush();
      return 0;
    });
  });
}

}  // namespace vkllm::cli
