#include "server/api/inference_routes.h"

#include <strings.h>

#include "server/api/inference_request.h"
#include "server/api/inference_response.h"
#include "server/api/json_request.h"
#include "server/api/time_format.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"
#include "server/http/status_error.h"
#include "server/http/streams.h"
#include "server/http/until_disconnect.h"
#include "server/scheduler/metrics.h"

namespace vkllm::api {

namespace {

using boost::asio::awaitable;
using http::Exchange;
using http::StatusError;
using nlohmann::json;
using nlohmann::ordered_json;

awaitable<void> generate_or_chat(InferenceApi& api, Exchange& ex, bool chat) {
  const std::string body = co_await ex.read_body();
  const json j = parse_json_object(body);
  InferenceEnvelope env = chat ? parse_chat_request(j) : parse_generate_request(j);
  if (env.request.format.is_object()) {
    // A schema's properties are generated in the client's order: take it from the raw body.
    const auto ordered = nlohmann::ordered_json::parse(body);
    for (const auto& [key, value] : ordered.items()) {
      if (value.is_object() && strcasecmp(key.c_str(), "format") == 0) env.request.format = value;
    }
  }
  const std::string model = env.request.model;
  const bool stream = env.stream;
  bool started = false;
  requests::GenerationChunk total;
  bool single = false;  // load/unload and render-only answers are one JSON object
  auto to_json = [&](const requests::GenerationChunk& c) {
    return chat ? chat_chunk_json(model, c) : generate_chunk_json(model, c);
  };
  requests::ChunkSink sink = [&](requests::GenerationChunk& c) -> awaitable<void> {
    const bool first_is_last =
        c.done && !started &&
        (c.done_reason == "load" || c.done_reason == "unload" || c.rendered_template.has_value());
    if (stream && !first_is_last) {
      // ordered_json keeps Ollama's key order (and tool-call argument order) on the wire.
      const std::string line = http::ndjson_line(to_json(c));
      if (!started) {
        started = true;
        co_await ex.start_chunked(200, http::kNdjsonContentType);
      }
      co_await ex.write_chunk(line);
    } else {
      single = single || first_is_last;
      accumulate(total, std::move(c));
    }
  };
  // Arguments built outside the co_await expression (GCC 12 coroutine temporaries).
  auto task = api.service.run(std::move(env.request), sink);
  auto guarded = http::until_disconnect(ex, std::move(task));
  if (!co_await std::move(guarded)) co_return;  // the client left
  if (stream && !single) {
    co_await ex.finish_chunked();
  } else {
    const std::string text = http::json_text(to_json(total));
    co_await ex.respond(200, http::kJsonContentType, text);
  }
}

awaitable<registry::ModelShow> model_of(InferenceApi& api, const json& j) {
  const std::string model = model_field(j);
  const registry::ModelName name = required_model_name(model, 400, "model is required");
  co_return co_await api.service.resolve(name, model);
}

awaitable<void> tokenize(InferenceApi& api, Exchange& ex) {
  const json j = parse_json_object(co_await ex.read_body());
  const registry::ModelShow show = co_await model_of(api, j);
  const std::string content =
      string_field(j, "content").value_or(string_field(j, "prompt").value_or(""));
  const bool add_special = bool_field(j, "add_special").value_or(false);
  const bool parse_special = bool_field(j, "parse_special").value_or(true);
  std::shared_ptr<const tokenizer::Tokenizer> tok = co_await api.service.tokenizer_for(show);
  ordered_json out;
  out["model"] = model_field(j);
  out["tokens"] = tok->encode(content, add_special, parse_special);
  co_await ex.respond(200, http::kJsonContentType, out.dump());
}

awaitable<void> detokenize(InferenceApi& api, Exchange& ex) {
  const json j = parse_json_object(co_await ex.read_body());
  const registry::ModelShow show = co_await model_of(api, j);
  std::vector<int32_t> ids;
  if (const json* t = find_field(j, "tokens")) {
    if (!t->is_array()) throw StatusError(400, "tokens must be an array of integers");
    for (const auto& id : *t) {
      if (!id.is_number_integer()) throw StatusError(400, "tokens must be an array of integers");
      ids.push_back(id.get<int32_t>());
    }
  }
  std::shared_ptr<const tokenizer::Tokenizer> tok = co_await api.service.tokenizer_for(show);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok->vocab_size()) {
      throw StatusError(400, "token id " + std::to_string(id) + " is outside the vocabulary of " +
                                 std::to_string(tok->vocab_size()));
    }
  }
  ordered_json out;
  out["model"] = model_field(j);
  out["content"] = tok->decode(ids);
  co_await ex.respond(200, http::kJsonContentType,
                      out.dump(-1, ' ', false, json::error_handler_t::replace));
}

awaitable<void> ps(InferenceApi& api, Exchange& ex) {
  ordered_json models = ordered_json::array();
  for (const auto& r : api.service.models().running()) {
    ordered_json m;
    m["name"] = r.show.name.display();
    m["model"] = r.show.name.display();
    m["size"] = r.size;
    m["digest"] = r.show.digest.hex();
    const auto& d = r.show.details;
    m["details"] = {
        {"parent_model", ""},
        {"format", d.format},
        {"family", d.family},
        {"families", d.families.empty() ? ordered_json(nullptr) : ordered_json(d.families)},
        {"parameter_size", d.parameter_size},
        {"quantization_level", d.quantization_level}};
    m["expires_at"] = rfc3339_local(r.expires_at);
    m["size_vram"] = r.size_vram;
    m["context_length"] = r.context_length;
    // vkllm's own field, only for a model split across devices: each device's share.
    if (!r.devices.empty()) {
      ordered_json devices = ordered_json::array();
      for (const auto& [device, bytes] : r.devices)
        devices.push_back({{"device", device}, {"size_vram", bytes}});
      m["devices"] = std::move(devices);
    }
    models.push_back(std::move(m));
  }
  ordered_json out;
  out["models"] = std::move(models);
  co_await ex.respond(200, http::kJsonContentType, out.dump());
}

awaitable<void> metrics(Exchange& ex) {
  co_await ex.respond(200, "text/plain; version=0.0.4; charset=utf-8", sched::metrics().render());
}

}  // namespace

void add_inference_routes(http::Router& router, InferenceApi& api) {
  router.add(http::Method::post, "/api/generate",
             [&api](Exchange& ex) { return generate_or_chat(api, ex, false); });
  router.add(http::Method::post, "/api/chat",
             [&api](Exchange& ex) { return generate_or_chat(api, ex, true); });
  router.add(http::Method::get, "/api/ps", [&api](Exchange& ex) { return ps(api, ex); });
  router.add(http::Method::post, "/api/tokenize",
             [&api](Exchange& ex) { return tokenize(api, ex); });
  router.add(http::Method::post, "/api/detokenize",
             [&api](Exchange& ex) { return detokenize(api, ex); });
  router.add(http::Method::get, "/metrics", [](Exchange& ex) { return metrics(ex); });
}

}  // namespace vkllm::api
