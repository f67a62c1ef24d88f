// Ollama's named templates (compat §5.6): the embedded index, Levenshtein detection over
// Unicode code points (then vkllm's family markers), and each template's text and default
// parameters.
#include <algorithm>
#include <mutex>

#include "server/prompt/embedded_templates.h"
#include "server/prompt/prompt.h"

namespace vkllm::prompt {

namespace {

struct Named {
  std::string name;
  std::u32string jinja;
};

std::string file_text(std::string_view name) {
  for (const auto& f : templates::embedded_files())
    if (name == f.name) {
      std::string s(reinterpret_cast<const char*>(f.data), f.size);
      // Ollama normalises CRLF when loading.
      std::string out;
      for (size_t i = 0; i < s.size(); ++i)
        if (!(s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n')) out += s[i];
      return out;
    }
  return {};
}

bool has_file(std::string_view name) {
  for (const auto& f : templates::embedded_files())
    if (name == f.name) return true;
  return false;
}

// Code points of UTF-8 text; invalid bytes become U+FFFD, as Go's []rune conversion does.
std::u32string code_points(std::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80             ? 1
               : (c & 0xE0) == 0xC0 ? 2
               : (c & 0xF0) == 0xE0 ? 3
               : (c & 0xF8) == 0xF0 ? 4
                                    : 0;
    char32_t cp = 0xFFFD;
    size_t used = 1;
    if (n == 1) {
      cp = c;
    } else if (n > 1 && i + n <= s.size()) {
      char32_t v = c & (0x7F >> n);
      bool ok = true;
      for (size_t k = 1; k < n; ++k) {
        auto cc = static_cast<unsigned char>(s[i + k]);
        if ((cc & 0xC0) != 0x80) ok = false;
        v = (v << 6) | (cc & 0x3F);
      }
      static const char32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
      if (ok && v >= min_cp[n] && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) {
        cp = v;
        used = n;
      }
    }
    out += cp;
    i += used;
  }
  return out;
}

// Levenshtein distance if it is <= k, else k + 1 (Ukkonen's band: only |i - j| <= k matters).
size_t bounded_levenshtein(const std::u32string& a, const std::u32string& b, size_t k) {
  size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > k) return k + 1;
  const size_t inf = k + 1;
  std::vector<size_t> prev(m + 1, inf), cur(m + 1, inf);
  for (size_t j = 0; j <= std::min(m, k); ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    size_t lo = i > k ? i - k : 0, hi = std::min(m, i + k);
    std::fill(cur.begin(), cur.end(), inf);
    if (lo == 0) cur[0] = i <= k ? i : inf;
    size_t row_min = cur[0];
    for (size_t j = std::max<size_t>(lo, 1); j <= hi; ++j) {
      size_t best = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      best = std::min(best, prev[j] + 1);
      best = std::min(best, cur[j - 1] + 1);
      cur[j] = std::min(best, inf);
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > k) return k + 1;
    std::swap(prev, cur);
  }
  return std::min(prev[m], inf);
}

const std::vector<Named>& index() {
  static const std::vector<Named> idx = [] {
    std::vector<Named> out;
    auto j = nlohmann::json::parse(file_text("index.json"), nullptr, false);
    if (!j.is_array()) return out;
    for (const auto& e : j)
      if (e.is_object() && e.contains("name") && e.contains("template"))
        out.push_back(
            {e["name"].get<std::string>(), code_points(e["template"].get<std::string>())});
    return out;
  }();
  return idx;
}

// Families recognised by the control tokens their chat templates write, for templates too unlike
// any index entry: every marker must occur. Mistral 3 (Ministral 3, Mistral Small 3.x,
// Magistral): a system prompt block, tools, and calls written as name[ARGS]{...}. gpt-oss:
// Harmony's message and channel tokens. Gemma 3n: Gemma 3's turns and system prefix with audio
// items, which Ollama's gemma3n models render with gemma3-instruct. Gemma 4: its turn and channel
// tokens (<|turn>role ... <turn|>, an empty thought channel opening the model's turn). Llama 4:
// its header and end-of-turn tokens (Ollama's index has no Llama 4 entry; llama4-instruct is
// vkllm's: llama.cpp's own llama4 chat format, with tools, calls and results as Ollama's llama4
// library template writes them).
struct FamilyMarkers {
  std::string_view name;
  std::string_view markers[4];
};
constexpr FamilyMarkers kFamilyMarkers[] = {
    {"mistral3-instruct", {"[SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[TOOL_CALLS]", "[ARGS]"}},
    {"gpt-oss", {"<|start|>", "<|channel|>", "<|message|>", "<|end|>"}},
    {"gemma3-instruct",
     {"<start_of_turn>", "<end_of_turn>", "first_user_prefix", "<audio_soft_token>"}},
    {"gemma4-instruct", {"<|turn>", "<turn|>", "<|channel>", "<channel|>"}},
    {"llama4-instruct", {"<|header_start|>", "<|header_end|>", "<|eot|>", ""}},
};

std::optional<std::string> family_by_markers(std::string_view jinja) {
  for (const auto& f : kFamilyMarkers) {
    if (std::all_of(std::begin(f.markers), std::end(f.markers),
                    [&](std::string_view m) { return jinja.find(m) != std::string_view::npos; }))
      return std::string(f.name);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> detect_named_template(std::string_view jinja) {
  if (jinja.empty()) return std::nullopt;
  std::u32string s = code_points(jinja);
  const Named* best = nullptr;
  size_t best_d = 100;  // must be < 100
  for (const auto& e : index()) {
    size_t d = bounded_levenshtein(s, e.jinja, best_d - 1);
    if (d < best_d) {
      best_d = d;
      best = &e;
      if (d == 0) break;
    }
  }
  if (!best) return family_by_markers(jinja);
  return best->name;
}

std::optional<std::string> named_template_text(std::string_view name) {
  std::string file = std::string(name) + ".gotmpl";
  if (name.empty() || name.find('/') != std::string_view::npos || !has_file(file))
    return std::nullopt;
  return file_text(file);
}

nlohmann::ordered_json named_template_parameters(std::string_view name) {
  std::string file = std::string(name) + ".json";
  if (name.empty() || !has_file(file)) return nlohmann::ordered_json::object();
  auto j = nlohmann::ordered_json::parse(file_text(file), nullptr, false);
  return j.is_object() ? j : nlohmann::ordered_json::object();
}

}  // namespace vkllm::prompt
