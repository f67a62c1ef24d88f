// The pieces every OpenAI-compatible request parser (/v1/chat/completions, /v1/completions,
// /v1/responses) is made of: reading fields the way Ollama's Go decoder does (exact key, then
// case-insensitive; null is absent; its type names in errors), the sampling and option fields
// the routes share, and chat messages, images and tools. Bad input throws http::StatusError(400).
// Internal to server/api (openai_request.h is the interface).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api/json_request.h"  // find_field: /v1 bodies decode as Go's encoding/json
#include "server/api/openai_request.h"
#include "server/prompt/prompt.h"
#include "server/requests/generation.h"

namespace vkllm::api::openai {

using J = nlohmann::ordered_json;

// Records each assistant tool call's name by id, for tool results that name only the id.
struct ToolNames {
  std::map<std::string, std::string> by_id;
  void remember(const prompt::ToolCall& c) {
    if (!c.id.empty()) by_id[c.id] = c.name;
  }
  std::string lookup(const std::string& id) const {
    auto it = by_id.find(id);
    return it == by_id.end() ? "" : it->second;
  }
};

// Go's %T of a decoded interface{} value, as Ollama's messages name them.
std::string go_type(const J& v);

[[noreturn]] void bad_type(std::string_view key, std::string_view want, const J& got);

std::optional<std::string> string_of(const J& obj, std::string_view key);

std::optional<bool> bool_of(const J& obj, std::string_view key);
std::optional<int64_t> int_of(const J& obj, std::string_view key);

// model, stream, Ollama's options and keep_alive, and the OpenAI sampling fields every route
// shares. OpenAI's fields win over `options`; OpenAI's default temperature applies only when
// neither sets one.
void parse_common(const J& body, OpenAiRequest& out, std::string_view max_tokens_key);

// OpenAI's top_p is 1.0 when neither the request nor its `options` sets one.
void default_top_p(const J& body, J& options);

// stop: a string or an array. /v1/chat/completions drops non-strings; /v1/completions rejects
// them (both as Ollama does).
void parse_stop(const J& body, OpenAiRequest& out, bool strict);

void parse_top_logprobs(const J& body, requests::GenerationRequest& r);

void parse_think_fields(const J& body, prompt::Think& think);

// image_url: "data:..." or {"url": "data:..."}.
std::string image_of(const J& v);

// Tool arguments arrive as a JSON string in OpenAI's API and are an object natively.
J parse_arguments(const J& args);

std::string role_of(const J& m);

// One OpenAI chat message becomes one or more native messages (compat §2.1): each text part and
// each image part is a message of its own with the same role.
void append_chat_message(const J& m, std::vector<prompt::Message>& out, ToolNames& names);

J tools_of(const J& body);

// tool_choice "none" means the model may not call tools: it never sees them. A named function
// narrows the tools to that one; "auto" and "required" leave them as they are.
J apply_tool_choice(const J& body, J tools);

// tool_choice "required" or a named function ({"type":"function","function":{"name"}}, or the
// Responses API's flat {"type":"function","name"}) forces a call; parallel_tool_calls false
// allows one call at most. `tools` are the tools left after apply_tool_choice ("required"
// without tools forces nothing; a name that matches no tool is left for the 400).
requests::ToolChoice tool_choice_of(const J& body, const J& tools);

// The constraints beyond `format` (openai_constraints.cpp): llama.cpp's `grammar` (GBNF) and
// vLLM's `structured_outputs` ({"json"|"regex"|"choice"|"grammar"|"json_object"}) and its older
// top-level guided_json/guided_regex/guided_choice/guided_grammar. A JSON schema goes to
// r.format, the others to r.constraint. At most one may be given; what is not supported is a
// 400 naming it.
void parse_constraints(const J& body, requests::GenerationRequest& r);

}  // namespace vkllm::api::openai
