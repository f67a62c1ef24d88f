// PromptBuilder: Ollama's prompt assembly (server/prompt.go chatPrompt, GenerateHandler and
// template.Execute): message history and SYSTEM, qwen3/deepseek-r1 think stripping, truncation
// to num_ctx, collation, image tags, and the messages / legacy / suffix execution modes.
#include <algorithm>

#include "server/prompt/builtin_renderers.h"
#include "server/prompt/go_template.h"
#include "server/prompt/harmony_names.h"
#include "server/prompt/prompt.h"
#include "server/prompt/template_data.h"
#include "server/prompt/template_inspect.h"

namespace vkllm::prompt {

// A parsed template and what it tells the output parser. Outside the anonymous namespace: it is
// a field of PromptBuilder::Impl (GCC warns of a subobject with internal linkage when unity
// builds include this file).
struct PreparedTemplate {
  GoTemplate tmpl;
  GoTemplate legacy_final;  // tmpl cut after the first .Response
  bool messages_mode = false;
  std::string think_open, think_close, tool_tag, tool_arguments_key;
  TemplateCapabilities caps;
  bool tool_name_then_args = false;
};

namespace {

using Prepared = PreparedTemplate;

constexpr size_t kImageTokens = 768;
constexpr const char* kHarmonyTemplate = "gpt-oss";
// Gemma 4's turns (named_templates.cpp): Ollama's gemma4 models name their renderer instead of
// shipping a template.
constexpr const char* kGemma4Template = "gemma4-instruct";

// llama.cpp's architecture name and Ollama's own converter's.
bool is_gpt_oss(std::string_view architecture) {
  return architecture == "gpt-oss" || architecture == "gptoss";
}

Prepared prepare(std::string_view text) {
  GoTemplate t = GoTemplate::parse(text);
  bool messages = t.references("messages");
  if (!messages && !t.references("response")) t = t.with_response_appended();
  Prepared p{t, t.cut_after_response(), messages, "", "", "", "", {}, false};
  infer_thinking_tags(t, p.think_open, p.think_close);
  p.tool_tag = tool_call_tag(t);
  p.tool_arguments_key = tool_call_arguments_key(t);
  p.tool_name_then_args = tool_call_name_then_args(t);
  p.caps.tools = t.references("tools");
  p.caps.insert = t.references("suffix");
  p.caps.thinking = !p.think_open.empty() && !p.think_close.empty();
  return p;
}

struct Values {
  std::vector<Message> messages;
  nlohmann::ordered_json tools;
  Think think;
  std::string prompt, suffix;
};

void add_think(Value::Map& m, const Think& think) {
  m["Think"] = Value::boolean(think.set && think.enabled);
  m["ThinkLevel"] = Value::string(think.set ? think.level : "");
  m["IsThinkSet"] = Value::boolean(think.set);
}

std::string ltrim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n\v\f");
  return b == std::string_view::npos ? "" : std::string(s.substr(b));
}

// Consecutive messages of one role (except tool) merge with "\n\n"; all system text joined.
std::pair<std::string, std::vector<Message>> collate(const std::vector<Message>& msgs) {
  std::string system;
  bool any_system = false;
  std::vector<Message> out;
  for (const auto& m : msgs) {
    if (m.role == "system") {
      if (any_system) system += "\n\n";
      system += m.content;
      any_system = true;
    }
    if (!out.empty() && out.back().role == m.role && m.role != "tool") {
      out.back().content += "\n\n" + m.content;
    } else {
      out.push_back(m);
    }
  }
  return {system, out};
}

std::string execute(const Prepared& p, const Values& v) {
  auto [system, messages] = collate(v.messages);
  if (!v.prompt.empty() && !v.suffix.empty()) {
    Value::Map root{{"Prompt", Value::string(v.prompt)},
                    {"Suffix", Value::string(v.suffix)},
                    {"Response", Value::string("")}};
    add_think(root, v.think);
    return p.tmpl.execute(Value::map(std::move(root)));
  }
  if (p.messages_mode) {
    Value::List list;
    for (const auto& m : messages) list.push_back(message_value(m));
    Value::Map root{{"System", Value::string(system)},
                    {"Messages", Value::list(std::move(list))},
                    {"Tools", tools_value(v.tools)},
                    {"Response", Value::string("")}};
    add_think(root, v.think);
    return p.tmpl.execute(Value::map(std::move(root)));
  }
  // Legacy: one execution per system/prompt/response group, the last cut after .Response.
  std::string out, sys, prompt, response;
  auto values = [&] {
    Value::Map root{{"System", Value::string(sys)},
                    {"Prompt", Value::string(prompt)},
                    {"Response", Value::string(response)}};
    add_think(root, v.think);
    return Value::map(std::move(root));
  };
  auto flush = [&] {
    out += p.tmpl.execute(values());
    sys.clear();
    prompt.clear();
    response.clear();
  };
  for (const auto& m : messages) {
    if (m.role == "system") {
      if (!prompt.empty() || !response.empty()) flush();
      sys = m.content;
    } else if (m.role == "user") {
      if (!response.empty()) flush();
      prompt = m.content;
    } else if (m.role == "assistant") {
      response = m.content;
    }
  }
  out += p.legacy_final.execute(values());
  return out;
}

// Ollama's thinking.Parser over a whole message: the text after a leading <think>...</think>.
std::string strip_think(const std::string& content) {
  static const std::string open = "<think>", close = "</think>";
  std::string trimmed = ltrim(content);
  if (trimmed.starts_with(open)) {
    std::string rest = trimmed.substr(open.size());
    size_t c = rest.find(close);
    if (c == std::string::npos) return "";
    return ltrim(std::string_view(rest).substr(c + close.size()));
  }
  if (open.starts_with(trimmed)) return "";  // only whitespace or a partial tag: held back
  return content;
}

std::string model_part(const std::string& name) {
  std::string s = name;
  size_t slash = s.rfind('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  size_t colon = s.find(':');
  if (colon != std::string::npos) s.resize(colon);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// Replaces [img] placeholders (or prefixes tags) with [img-N], N counting images globally.
void tag_images(std::vector<Message>& msgs, size_t from, std::vector<std::string>& images) {
  for (size_t k = from; k < msgs.size(); ++k) {
    Message& m = msgs[k];
    std::string prefix, text = m.content;
    for (const auto& img : m.images) {
      std::string tag = "[img-" + std::to_string(images.size()) + "]";
      size_t at = text.find("[img]");
      if (at == std::string::npos)
        prefix += tag;
      else
        text.replace(at, 5, tag);
      images.push_back(img);
    }
    m.content = prefix + text;
  }
}

// The names of the request's tools.
std::vector<std::string> request_tool_names(const nlohmann::ordered_json& tools) {
  std::vector<std::string> names;
  if (tools.is_array())
    for (const auto& t : tools)
      if (t.is_object() && t.contains("function") && t["function"].is_object() &&
          t["function"].contains("name") && t["function"]["name"].is_string())
        names.push_back(t["function"]["name"].get<std::string>());
  return names;
}

}  // namespace

struct PromptBuilder::Impl {
  ModelPrompt model;
  std::string detected;  // before text: resolve() fills it
  std::string text;
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  PreparedTemplate prepared;
  bool harmony = false;
  // Ollama's built-in renderer and parser: named by RENDERER/PARSER, or both detected from a GGUF
  // chat_template when the model has neither them nor a TEMPLATE.
  BuiltinRenderer renderer = BuiltinRenderer::kNone;
  std::string renderer_name, parser_name;

  // RENDERER harmony wins over everything (Ollama's renderers replace the template); a gpt-oss
  // GGUF without a TEMPLATE layer or a chat_template we recognise still renders Harmony. Gemma
  // 4's template stands beside its built-in renderer (choose_builtin) for what renderers do not
  // write (generate's suffix mode, the stop parameter).
  static std::string resolve(const ModelPrompt& m, std::string& detected) {
    if (m.renderer == "harmony") return *named_template_text(kHarmonyTemplate);
    if (const auto r = builtin_renderer(m.renderer);
        r == BuiltinRenderer::kGemma4 || r == BuiltinRenderer::kGemma4Large) {
      detected = kGemma4Template;
      return *named_template_text(kGemma4Template);
    }
    if (m.template_text) return *m.template_text;
    if (auto name = detect_named_template(m.gguf_chat_template)) {
      if (auto t = named_template_text(*name)) {
        detected = *name;
        return *t;
      }
    }
    if (is_gpt_oss(m.architecture)) {
      detected = kHarmonyTemplate;
      return *named_template_text(kHarmonyTemplate);
    }
    if (m.architecture == "gemma4") {
      detected = kGemma4Template;
      return *named_template_text(kGemma4Template);
    }
    return "{{ .Prompt }}";
  }

  // Ollama's shouldUseHarmony, and its PARSER harmony; RENDERER harmony implies the parser.
  static bool harmony_output(const ModelPrompt& m, const std::string& text) {
    if (m.parser == "harmony") return true;
    if (!m.parser.empty()) return false;
    if (m.renderer == "harmony") return true;
    return is_gpt_oss(m.architecture) && text.find("<|start|>") != std::string::npos &&
           text.find("<|end|>") != std::string::npos;
  }

  explicit Impl(ModelPrompt m)
      : model(std::move(m)),
        text(resolve(model, detected)),
        prepared(prepare(text)),
        harmony(harmony_output(model, text)) {
    if (!detected.empty()) params = named_template_parameters(detected);
    if (harmony) {  // Ollama's harmony parser has tool and thinking support
      prepared.caps.tools = true;
      prepared.caps.thinking = true;
    }
    choose_builtin();
  }

  void choose_builtin() {
    if (builtin_renderer(model.renderer) != BuiltinRenderer::kNone) renderer_name = model.renderer;
    if (builtin_parser_traits(model.parser)) parser_name = model.parser;
    if (model.renderer.empty() && model.parser.empty() && !model.template_text) {
      // The named template detected beside it (Gemma 4's) stays for generate's suffix and
      // template modes and its stop parameters.
      auto format = detect_builtin_format(model.gguf_chat_template);
      if (!format && detected == kGemma4Template) format = BuiltinFormat{"gemma4", "gemma4"};
      if (format) {
        renderer_name = format->renderer;
        parser_name = format->parser;
      }
    }
    renderer = builtin_renderer(renderer_name);
    // As Ollama: the capabilities come from the parser (the template's do not apply to output
    // the parser reads).
    if (auto traits = builtin_parser_traits(parser_name)) {
      prepared.caps.tools = traits->tools;
      prepared.caps.thinking = traits->thinking;
    }
  }

  // The prompt for these messages: the built-in renderer's, or the template executed.
  std::string render_messages(const std::vector<Message>& msgs, const nlohmann::ordered_json& tools,
                              const Think& think) const {
    if (renderer != BuiltinRenderer::kNone) return render_builtin(renderer, msgs, tools, think);
    return execute(prepared, Values{msgs, tools, think, "", ""});
  }

  // What the template sees for a Harmony model: tools renamed to TypeScript identifiers (the
  // parser maps the names back) and think "max" as "high" (Harmony knows low/medium/high).
  nlohmann::ordered_json template_tools(const nlohmann::ordered_json& tools) const {
    return harmony ? HarmonyFunctionNames::renamed_tools(tools) : tools;
  }
  Think template_think(Think think) const {
    if (harmony && think.level == "max") think.level = "high";
    return think;
  }

  Rendered chat_like(std::vector<Message> msgs, const nlohmann::ordered_json& tools,
                     const Think& think, bool truncate, uint32_t num_ctx,
                     const TokenCounter& count) const {
    Rendered r;
    if (msgs.empty()) {
      r.text = render_messages({}, tools, think);
      return r;
    }
    // Ollama drops the oldest messages until the rest fits num_ctx, keeping every system
    // message and the last message: it scans i = last-1 .. 0, rendering msgs[i..] each time,
    // and stops at the first i that does not fit. Rendering more messages never yields fewer
    // tokens, so the same i is found with O(log n) renders instead of O(n) (20,000 messages took
    // 44 s that way): try everything first (the usual case), then bisect.
    const size_t last = msgs.size() - 1;
    auto with_system_before = [&msgs](size_t i) {
      std::vector<Message> part;
      for (size_t j = 0; j < i; ++j)
        if (msgs[j].role == "system") part.push_back(msgs[j]);
      part.insert(part.end(), msgs.begin() + static_cast<ptrdiff_t>(i), msgs.end());
      return part;
    };
    auto fits = [&](size_t i) {
      size_t tokens = count(render_messages(with_system_before(i), tools, think));
      if (model.has_projector)
        for (size_t k = i; k < msgs.size(); ++k) tokens += kImageTokens * msgs[k].images.size();
      return tokens <= num_ctx;
    };
    size_t n = 0;
    if (truncate && count && last > 0 && !fits(0)) {
      // fits(last) is taken as true (the last message always stays): find the smallest i in
      // (lo, last] that fits, with fits(lo) false.
      size_t lo = 0, hi = last;
      while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (fits(mid)) {
          hi = mid;
        } else {
          lo = mid;
        }
      }
      n = hi;
    }
    // As Ollama: the system messages kept are those before the first message that did not fit
    // (msgs[n - 1]), so a system message that is itself that message goes with it.
    std::vector<Message> system;
    for (size_t j = 0; j + 1 < n; ++j)
      if (msgs[j].role == "system") system.push_back(msgs[j]);
    std::vector<Message> part = system;
    if (renderer == BuiltinRenderer::kNone) tag_images(msgs, n, r.images);
    part.insert(part.end(), msgs.begin() + n, msgs.end());
    if (renderer == BuiltinRenderer::kNone) {
      r.text = render_messages(part, tools, think);
      return r;
    }
    // The renderer numbers the tags its own way and says which image each one is.
    std::vector<ImageRef> refs;
    r.text = render_builtin(renderer, part, tools, think, &refs);
    for (const auto& ref : refs) r.images.push_back(part[ref.message].images[ref.image]);
    return r;
  }
};

PromptBuilder::PromptBuilder(ModelPrompt model) : impl_(std::make_unique<Impl>(std::move(model))) {}
PromptBuilder::~PromptBuilder() = default;
PromptBuilder::PromptBuilder(PromptBuilder&&) noexcept = default;

const std::string& PromptBuilder::template_text() const {
  return impl_->text;
}
const std::string& PromptBuilder::detected_template() const {
  return impl_->detected;
}
const nlohmann::ordered_json& PromptBuilder::default_parameters() const {
  return impl_->params;
}
TemplateCapabilities PromptBuilder::capabilities() const {
  return impl_->prepared.caps;
}

Rendered PromptBuilder::render_chat(const ChatInput& input, uint32_t num_ctx,
                                    const TokenCounter& count) const {
  const ModelPrompt& m = impl_->model;
  std::vector<Message> msgs = m.messages;
  msgs.insert(msgs.end(), input.messages.begin(), input.messages.end());
  if (!input.messages.empty() && input.messages.front().role != "system" && !m.system.empty())
    msgs.insert(msgs.begin(), Message{"system", m.system, "", {}, {}, "", ""});
  // Ollama strips past thinking for its qwen3 family (a built-in renderer handles inline
  // thinking itself: only the exact family there) and deepseek-r1.
  const bool qwen3_family = impl_->renderer == BuiltinRenderer::kNone
                                ? m.architecture.starts_with("qwen3")
                                : m.architecture == "qwen3";
  if (qwen3_family || model_part(m.name) == "deepseek-r1") {
    ptrdiff_t last_user = -1;
    for (size_t i = 0; i < msgs.size(); ++i)
      if (msgs[i].role == "user") last_user = static_cast<ptrdiff_t>(i);
    for (ptrdiff_t i = 0; i < last_user; ++i)
      if (msgs[i].role == "assistant") msgs[i].content = strip_think(msgs[i].content);
  }
  return impl_->chat_like(std::move(msgs), impl_->template_tools(input.tools),
                          impl_->template_think(input.think), input.truncate, num_ctx, count);
}

Rendered PromptBuilder::render_generate(const GenerateInput& input) const {
  return render_generate(input, 0, {});
}

Rendered PromptBuilder::render_generate(const GenerateInput& input, uint32_t num_ctx,
                                        const TokenCounter& count) const {
  const ModelPrompt& m = impl_->model;
  if (!input.suffix.empty()) {
    Rendered r;
    r.text = execute(
        impl_->prepared,
        Values{{}, nullptr, impl_->template_think(input.think), input.prompt, input.suffix});
    return r;
  }
  std::vector<Message> msgs;
  std::string system = input.system ? *input.system : m.system;
  if (!system.empty()) msgs.push_back(Message{"system", system, "", {}, {}, "", ""});
  if (!input.has_context) msgs.insert(msgs.end(), m.messages.begin(), m.messages.end());
  msgs.push_back(Message{"user", input.prompt, "", input.images, {}, "", ""});
  if (input.template_override) {
    Prepared p = prepare(*input.template_override);
    Rendered r;
    r.text = execute(p, Values{msgs, nullptr, input.think, "", ""});
    return r;
  }
  return impl_->chat_like(std::move(msgs), nlohmann::ordered_json::array(),
                          impl_->template_think(input.think), input.truncate, num_ctx, count);
}

bool PromptBuilder::uses_harmony() const {
  return impl_->harmony;
}

const std::string& PromptBuilder::builtin_renderer_name() const {
  return impl_->renderer_name;
}

const std::string& PromptBuilder::builtin_parser_name() const {
  return impl_->parser_name;
}

ParserConfig PromptBuilder::parser_config(const nlohmann::ordered_json& tools, const Think& think,
                                          std::string_view rendered_prompt,
                                          const Message* last_message) const {
  const Prepared& p = impl_->prepared;
  ParserConfig c;
  if (!impl_->parser_name.empty()) {
    // Ollama's qwen3.5 parser thinks unless think is false (an absent think is true); the
    // others only when think is on.
    c.builtin_parser = impl_->parser_name;
    c.thinking = p.caps.thinking && (c.builtin_parser == "qwen3.5" ? !(think.set && !think.enabled)
                                                                   : think.set && think.enabled);
    c.tools = tools;
    c.tool_names = request_tool_names(tools);
    c.assistant_prefill =
        last_message && last_message->role == "assistant" && !last_message->content.empty();
    c.after_tool_result = last_message && last_message->role == "tool";
    // Gemma 4's, LFM2's and Mistral's tags are control tokens: decoded as text for the parser.
    c.special_tokens = c.builtin_parser.starts_with("gemma4") ||
                       c.builtin_parser.starts_with("lfm2") || c.builtin_parser == "ministral";
    return c;
  }
  if (impl_->harmony) {
    // Ollama's AddImplicitStartOrPrefill: a last assistant message is continued.
    c.harmony = true;
    c.special_tokens = true;
    if (last_message && last_message->role == "assistant") {
      if (!last_message->content.empty()) {
        c.harmony_prefill = "final";
      } else if (!last_message->thinking.empty()) {
        c.harmony_prefill = "analysis";
      }
    }
  }
  c.think_open = p.think_open;
  c.think_close = p.think_close;
  c.thinking = p.caps.thinking && !(think.set && !think.enabled);
  if (c.thinking) {
    std::string_view t = rendered_prompt;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    c.starts_in_thinking = t.ends_with(c.think_open);
    // Gemma 4's thought channel opens and closes with its own tokens (<|channel>, <channel|>),
    // which its tokenizer may mark as control tokens: decoded as text so the channel is seen.
    if (impl_->detected == kGemma4Template) c.special_tokens = true;
  }
  c.tool_tag = p.tool_tag;
  c.tool_arguments_key = p.tool_arguments_key;
  c.tool_name_then_args = p.tool_name_then_args;
  c.tool_names = request_tool_names(tools);
  return c;
}

std::optional<std::string> check_template(std::string_view text) {
  try {
    GoTemplate::parse(text);
    return std::nullopt;
  } catch (const TemplateError& e) {
    return std::string(e.what());
  }
}

}  // namespace vkllm::prompt
