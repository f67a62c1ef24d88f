#include "server/api/inference_request.h"

#include <cmath>

#include "server/api/chat_request.h"
#include "server/api/json_request.h"
#include "server/http/exchange.h"
#include "server/scheduler/go_duration.h"

namespace vkllm::api {

namespace {

using http::StatusError;
using nlohmann::json;

std::optional<int64_t> int_field(const json& body, std::string_view key) {
  const json* v = find_field(body, key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer() && !(v->is_number_float() && std::fabs(v->get<double>()) < 9.2e18 &&
                                   v->get<double>() == int64_t(v->get<double>()))) {
    wrong_type(*v, key, "int");
  }
  return v->get<int64_t>();
}

// Fields every inference request shares (compat §1.4).
void parse_common(const json& body, requests::GenerationRequest& r, bool& stream) {
  stream = bool_field(body, "stream").value_or(true);
  r.keep_alive = parse_keep_alive(body);
  r.options = options_field(body);
  if (const json* f = find_field(body, "format")) {
    if (f->is_string()) {
      const auto& s = f->get_ref<const std::string&>();
      if (!s.empty() && s != "json") {
        throw StatusError(
            400, "invalid format: \"" + s + "\"; expected \"json\" or a valid JSON Schema object");
      }
      if (s == "json") r.format = "json";
    } else if (f->is_object()) {
      r.format = *f;
    } else {
      throw StatusError(400, "invalid format: " + f->dump() +
                                 "; expected \"json\" or a valid JSON Schema object");
    }
  }
  r.logprobs = bool_field(body, "logprobs").value_or(false);
  if (auto t = int_field(body, "top_logprobs")) {
    if (*t < 0 || *t > 20) throw StatusError(400, "top_logprobs must be between 0 and 20");
    r.top_logprobs = static_cast<int>(*t);
  }
  r.shift = bool_field(body, "shift");
  r.debug_render_only = bool_field(body, "_debug_render_only").value_or(false);
}

}  // namespace

void normalise_think(prompt::Think& think) {
  const auto& l = think.level;
  if (think.enabled && l != "low" && l != "medium" && l != "high" && l != "max") {
    think.level = "medium";
  }
}

std::optional<std::chrono::nanoseconds> parse_keep_alive(const json& body) {
  const json* v = find_field(body, "keep_alive");
  if (!v) return std::nullopt;
  if (v->is_number()) {
    const double ns = v->get<double>() * 1e9;
    // Beyond ±292 years: forever (Go's conversion yields MinInt64 there on amd64); converting
    // it to int64 here would be undefined.
    if (!(std::fabs(ns) < 9.2e18)) return std::chrono::nanoseconds::min();
    return std::chrono::nanoseconds(static_cast<int64_t>(ns));
  }
  if (v->is_string()) {
    try {
      return sched::parse_go_duration(v->get_ref<const std::string&>());
    } catch (const std::invalid_argument& e) {
      throw StatusError(400, e.what());
    }
  }
  throw StatusError(400, "Unsupported type: '" + std::string(go_type_name(*v)) + "'");
}

InferenceEnvelope parse_generate_request(const json& body) {
  InferenceEnvelope env;
  auto& r = env.request;
  r.kind = requests::GenerationRequest::Kind::generate;
  r.model = model_field(body);
  r.name = required_model_name(r.model, 404, "model '' not found");
  parse_common(body, r, env.stream);
  r.generate = generate_input(body);
  normalise_think(r.generate.think);
  const auto& g = r.generate;
  r.raw = bool_field(body, "raw").value_or(false);
  if (const json* c = find_field(body, "context")) {
    if (!c->is_array()) wrong_type(*c, "context", "[]int");
    for (const auto& t : *c) {
      if (!t.is_number_integer()) wrong_type(t, "context", "int");
      r.context.push_back(t.get<int32_t>());
    }
  }
  if (r.raw && (g.template_override || (g.system && !g.system->empty()) || !r.context.empty())) {
    throw StatusError(400, "raw mode does not support template, system, or context");
  }
  return env;
}

InferenceEnvelope parse_chat_request(const json& body) {
  InferenceEnvelope env;
  auto& r = env.request;
  r.kind = requests::GenerationRequest::Kind::chat;
  r.model = model_field(body);
  r.name = required_model_name(r.model, 400, "model is required");
  parse_common(body, r, env.stream);
  r.chat = chat_input(body);
  normalise_think(r.chat.think);
  return env;
}

}  // namespace vkllm::api
