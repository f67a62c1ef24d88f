#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/bpe_pretokenizer.h"

#include <pcre2.h>

#include <algorithm>
#include <new>

#include "engine/tokenizer/tokenizer_error.h"

namespace vkllm::tokenizer {
namespace {

// The regexes (PCRE2 syntax, matched with Unicode properties) of llama.cpp's pre-tokenizers.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kCjk = "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";

struct Family {
  std::vector<std::string_view> names;
  std::vector<const char*> regexes;
  bool ignore_merges = false;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {{"default", "gpt-neox"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       {kLlama3},
       true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}},
      {{"deepseek-llm"},
       {"[\r\n]",
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
        "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
        "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
        "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
        "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
        "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
        "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
        "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-"
        "\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-"
        "\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}"
        "\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-"
        "\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
        "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}"
        "-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-"
        "\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-"
        "\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-"
        "\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-"
        "\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$", kCjk, R"(\p{N}+)"}},
      {{"deepseek-coder"}, {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}},
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2}},
      {{"gpt-2", "gpt2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de", "jina-v1-en",
        "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe", "gigachat", "trillion"},
       {kGpt2}},
      {{"qwen2", "stablelm2", "deepseek-r1-qwen", "hunyuan"}, {kQwen2}},
      // o200k (gpt-oss, GPT-4o), tokenizer.json's own expression: PCRE2 takes the Unicode
      // classes and the case-insensitive group as written.
      {{"gpt-4o", "llama4"},
       {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}"
        "\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}"
        "\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
      {{"poro-chat", "bloom", "gpt3-finnish"},
       {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"}},
      {{"viking"},
       {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+",
        R"(\p{N})"}},
  };
  return f;
}

}  // namespace

struct BpePreTokenizer::Regex {
  pcre2_code* code = nullptr;
  explicit Regex(const char* pattern) {
    int err = 0;
    PCRE2_SIZE offset = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &offset, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw TokenizerError("tokenizer: pre-tokenizer regex does not compile at offset " +
                           std::to_string(offset) + ": " + reinterpret_cast<char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if no JIT
  }
  ~Regex() { pcre2_code_free(code); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
};

BpePreTokenizer::BpePreTokenizer(std::string_view pre) {
  for (const Family& f : families()) {
    if (std::find(f.names.begin(), f.names.end(), pre) == f.names.end()) continue;
    for (const char* r : f.regexes) regexes_.push_back(std::make_unique<Regex>(r));
    ignore_merges_ = f.ignore_merges;
    return;
  }
  std::string known;
  for (const auto& n : known_names()) known += (known.empty() ? "" : ", ") + n;
  throw TokenizerError("tokenizer: unknown BPE pre-tokenizer tokenizer.ggml.pre='" +
                       std::string(pre) + "' (known: " + known + ")");
}

BpePreTokenizer::~BpePreTokenizer() = default;
BpePreTokenizer::BpePreTokenizer(BpePreTokenizer&&) noexcept = default;

std::vector<std::string> BpePreTokenizer::known_names() {
  std::vector<std::string> out;
  for (const Family& f : families()) {
    for (auto n : f.names) out.emplace_back(n);
  }
  return out;
}

void BpePreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  std::vector<std::string_view> current{text}, next;
  if (text.empty()) return;
  struct MatchData {
    pcre2_match_data* p;
    ~MatchData() { pcre2_match_data_free(p); }
  };
  for (const auto& regex : regexes_) {
    MatchData md{pcre2_match_data_create_from_pattern(regex->code, nullptr)};
    if (!md.p) throw std::bad_alloc();
    next.clear();
    for (std::string_view piece : current) {
      // Each piece is its own subject: lookarounds do not see past its ends (as in llama.cpp).
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0, last_end = 0;
      while (pos < piece.size()) {
        const int rc =
            pcre2_match(regex->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, md.p, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          throw TokenizerError("tokenizer: pre-tokenizer regex failed on a " +
                               std::to_string(piece.size()) +
                               "-byte piece: " + reinterpret_cast<char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.p);
        const size_t start = ov[0], end = ov[1];
        if (end == start) {  // an empty match cannot split anything; step over one character
          pos = start + 1;
          while (pos < piece.size() && (static_cast<uint8_t>(piece[pos]) & 0xC0) == 0x80) ++pos;
          continue;
        }
        if (start > last_end) next.push_back(piece.substr(last_end, start - last_end));
        next.push_back(piece.substr(start, end - start));
        last_end = pos = end;
      }
      if (last_end < piece.size()) next.push_back(piece.substr(last_end));
    }
    current.swap(next);
  }
  words.insert(words.end(), current.begin(), current.end());
}

}  // namespace vkllm::tokenizer
