#include "tests/unit/tokenizer/test_support.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/tokenizer/utf8.h"

namespace vkllm::tokenizer::testing {

std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("VKLLM_SHARED_DIR")) return env;
  return VKLLM_SHARED_DIR;
}

std::filesystem::path vocab_dir() {
  return shared_dir() / "testdata" / "vocab";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const Tokenizer& vocab_tokenizer(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[name];
  if (!slot) {
    if (name == "llama-bpe") {
      const auto dir = vocab_dir() / "llama3.2";
      const auto image = build_llama3_vocab_gguf(dir / "encoder.json", dir / "vocab.bpe");
      const auto file = gguf::GgufFile::parse(image);
      slot = Tokenizer::from_gguf(file);
    } else if (name == "gemma4") {
      const auto file = gguf::GgufFile::open(std::filesystem::path(VKLLM_SOURCE_DIR) / "tests" /
                                             "reference" / "gemma4tok" / "gemma4-vocab.gguf");
      slot = Tokenizer::from_gguf(file);
    } else {
      const auto file = gguf::GgufFile::open(vocab_dir() / ("ggml-vocab-" + name + ".gguf"));
      slot = Tokenizer::from_gguf(file);
    }
  }
  return *slot;
}

namespace {

std::vector<std::string> scan(bool need_vectors) {
  std::vector<std::string> names;
  const std::string prefix = "ggml-vocab-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(vocab_dir(), ec)) {
    const std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) != 0 || e.path().extension() != ".gguf") continue;
    const std::string name = f.substr(prefix.size(), f.size() - prefix.size() - 5);
    if (need_vectors && !std::filesystem::exists(e.path().string() + ".inp")) continue;
    names.push_back(name);
  }
  if (std::filesystem::exists(vocab_dir() / "llama3.2" / "encoder.json") &&
      (!need_vectors || std::filesystem::exists(vocab_dir() / "ggml-vocab-llama-bpe.gguf.inp"))) {
    names.push_back("llama-bpe");
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<std::string> all_vocab_names() {
  return scan(false);
}
std::vector<std::string> vocab_names_with_vectors() {
  return scan(true);
}

std::vector<TestVector> read_vectors(const std::string& name) {
  const auto base = vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  const std::string inp = read_file(base.string() + ".inp");
  const std::string out = read_file(base.string() + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<TestVector> vectors;
  size_t pos = 0;
  for (size_t next; (next = inp.find(sep, pos)) != std::string::npos; pos = next + sep.size()) {
    vectors.push_back({inp.substr(pos, next - pos), {}});
  }
  if (pos != inp.size()) throw std::runtime_error(name + ".inp: text after the last separator");
  std::istringstream lines(out);
  std::string line;
  for (auto& v : vectors) {
    if (!std::getline(lines, line)) throw std::runtime_error(name + ".out: fewer lines than tests");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) v.ids.push_back(id);
  }
  if (std::getline(lines, line) && !line.empty()) {
    throw std::runtime_error(name + ".out: more lines than tests");
  }
  return vectors;
}

bool is_valid_utf8(std::string_view s) {
  return utf8::is_valid(s);
}

bool built_with_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace vkllm::tokenizer::testing
