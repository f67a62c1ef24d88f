#include "server/api/embed_routes.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include <openssl/evp.h>

#include "server/api/inference_request.h"
#include "server/api/json_request.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"
#include "server/http/status_error.h"
#include "server/http/until_disconnect.h"

namespace vkllm::api {

namespace {

using boost::asio::awaitable;
using http::Exchange;
using http::StatusError;
using nlohmann::json;

// ---- Request fields

// An integer field as Go decodes one into an int (fractions and other types are errors).
int64_t int_field(const json& body, std::string_view key, int64_t fallback) {
  const json* v = find_field(body, key);
  if (!v) return fallback;
  if (v->is_number_integer()) return v->get<int64_t>();
  const std::string what = v->is_number() ? "number " + v->dump() : std::string(v->type_name());
  throw StatusError(400, "json: cannot unmarshal " + (what == "boolean" ? "bool" : what) +
                             " into Go struct field ." + std::string(key) + " of type int");
}

// ---- Response bodies (vectors written as shortest float32 text, as Go writes []float32)

void append_float(std::string& out, float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_vector(std::string& out, const std::vector<float>& v, bool as_float64 = false) {
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    if (as_float64) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, double{v[i]});
      out.append(buf, r.ptr);
    } else {
      append_float(out, v[i]);
    }
  }
  out += ']';
}

std::string base64_of(const std::vector<float>& v) {
  // Little-endian float32 bytes, as OpenAI's base64 encoding_format.
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t w;
    std::memcpy(&w, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((w >> (8 * b)) & 0xff);
  }
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string json_string(std::string_view s) {
  return http::json_text(json(s));
}

// A JSON answer written as it is built: pieces go out as chunks once they add up to a few
// hundred KB, so a large answer's text never sits whole in memory; a small one is sent with a
// Content-Length as before.
class PiecewiseBody {
 public:
  PiecewiseBody(Exchange& ex, std::string_view content_type)
      : ex_(ex), content_type_(content_type) {}
  std::string& text() { return text_; }
  awaitable<void> flush_if_large() {
    if (text_.size() >= kPiece) co_await flush();
  }
  awaitable<void> finish() {
    if (!started_) {
      co_await ex_.respond(200, content_type_, std::move(text_));
      co_return;
    }
    co_await flush();
    co_await ex_.finish_chunked();
  }

 private:
  static constexpr size_t kPiece = 256 * 1024;
  awaitable<void> flush() {
    if (!started_) {
      started_ = true;
      co_await ex_.start_chunked(200, content_type_);
    }
    if (!text_.empty()) co_await ex_.write_chunk(text_);
    text_.clear();
  }
  Exchange& ex_;
  std::string content_type_;
  std::string text_;
  bool started_ = false;
};

// ---- /api/embed

awaitable<void> api_embed(EmbedApi& api, Exchange& ex) {
  const std::string text = co_await ex.read_body();
  const json body = parse_json_object(text);
  requests::EmbedRequest req;
  req.model = model_field(body);
  req.name = required_model_name(req.model, 404, "model '' not found");
  if (const json* in = find_field(body, "input")) {
    if (in->is_string()) {
      if (!in->get_ref<const std::string&>().empty()) req.inputs.push_back(in->get<std::string>());
    } else if (in->is_array()) {
      for (const auto& e : *in) {
        if (!e.is_string()) throw StatusError(400, "invalid input type");
        req.inputs.push_back(e.get<std::string>());
      }
    } else {
      throw StatusError(400, "invalid input type");
    }
  }
  req.truncate = bool_field(body, "truncate").value_or(true);
  req.dimensions = static_cast<uint32_t>(std::max<int64_t>(0, int_field(body, "dimensions", 0)));
  req.options = options_field(body);
  req.keep_alive = parse_keep_alive(body);
  const std::string model = req.model;
  auto task = api.service.embed(std::move(req));
  auto guarded = http::until_disconnect(ex, std::move(task));
  const std::optional<requests::EmbedResult> result = co_await std::move(guarded);
  if (!result) co_return;  // the client left
  const requests::EmbedResult& r = *result;

  PiecewiseBody body_out(ex, http::kJsonContentType);
  std::string& out = body_out.text();
  out = "{\"model\":" + json_string(model) + ",\"embeddings\":[";
  for (size_t i = 0; i < r.embeddings.size(); ++i) {
    if (i) out += ',';
    append_vector(out, r.embeddings[i]);
    co_await body_out.flush_if_large();
  }
  out += ']';
  if (!r.embeddings.empty()) {
    out += ",\"total_duration\":" + std::to_string(r.total_duration.count());
    out += ",\"load_duration\":" + std::to_string(r.load_duration.count());
    out += ",\"prompt_eval_count\":" + std::to_string(r.prompt_tokens);
  }
  out += '}';
  co_await body_out.finish();
}

// ---- /api/embeddings (legacy: one prompt, raw vector of float64s)

awaitable<void> api_embeddings(EmbedApi& api, Exchange& ex) {
  const std::string text = co_await ex.read_body();
  const json body = parse_json_object(text);
  requests::EmbedRequest req;
  req.model = model_field(body);
  req.name = required_model_name(req.model, 400, "model is required");
  if (auto prompt = string_field(body, "prompt"); prompt && !prompt->empty()) {
    req.inputs.push_back(*prompt);
  }
  req.normalize = false;
  req.truncate = false;
  req.options = options_field(body);
  req.keep_alive = parse_keep_alive(body);
  auto task = api.service.embed(std::move(req));
  auto guarded = http::until_disconnect(ex, std::move(task));
  const std::optional<requests::EmbedResult> result = co_await std::move(guarded);
  if (!result) co_return;  // the client left
  const requests::EmbedResult& r = *result;
  std::string out = "{\"embedding\":";
  if (r.embeddings.empty()) {
    out += "[]";
  } else {
    for (float v : r.embeddings[0]) {
      if (!std::isfinite(v)) throw StatusError(500, "embedding contains NaN or Inf values");
    }
    append_vector(out, r.embeddings[0], /*as_float64=*/true);
  }
  out += '}';
  co_await ex.respond(200, http::kJsonContentType, std::move(out));
}

// ---- /v1/embeddings

awaitable<void> v1_embeddings(EmbedApi& api, Exchange& ex) {
  const std::string text = co_await ex.read_body();
  const json body = parse_json_object(text);
  requests::EmbedRequest req;
  req.model = model_field(body);
  req.name = required_model_name(req.model, 404, "model '' not found");
  const json* in = find_field(body, "input");
  if (!in) throw StatusError(400, "invalid input");
  if (in->is_string()) {
    req.inputs.push_back(in->get<std::string>());  // "" is embedded as [""]
  } else if (in->is_array()) {
    if (in->empty()) throw StatusError(400, "invalid input");
    for (const auto& e : *in) {
      if (!e.is_string()) throw StatusError(400, "invalid input type");
      req.inputs.push_back(e.get<std::string>());
    }
  } else {
    throw StatusError(400, "invalid input type");
  }
  const std::string format = string_field(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64") {
    throw StatusError(400, "Invalid value for 'encoding_format' = " + format +
                               ". Supported values: ['float', 'base64'].");
  }
  req.dimensions = static_cast<uint32_t>(std::max<int64_t>(0, int_field(body, "dimensions", 0)));
  const std::string model = req.model;
  auto task = api.service.embed(std::move(req));
  auto guarded = http::until_disconnect(ex, std::move(task));
  const std::optional<requests::EmbedResult> result = co_await std::move(guarded);
  if (!result) co_return;  // the client left
  const requests::EmbedResult& r = *result;

  PiecewiseBody body_out(ex, "application/json");
  std::string& out = body_out.text();
  out = "{\"object\":\"list\",\"data\":[";
  for (size_t i = 0; i < r.embeddings.size(); ++i) {
    if (i) out += ',';
    out += "{\"object\":\"embedding\",\"embedding\":";
    if (format == "base64") {
      out += '"' + base64_of(r.embeddings[i]) + '"';
    } else {
      append_vector(out, r.embeddings[i]);
    }
    out += ",\"index\":" + std::to_string(i) + '}';
    co_await body_out.flush_if_large();
  }
  out += "],\"model\":" + json_string(model) +
         ",\"usage\":{\"prompt_tokens\":" + std::to_string(r.prompt_tokens) +
         ",\"total_tokens\":" + std::to_string(r.prompt_tokens) + "}}\n";
  co_await body_out.finish();
}

// ---- /api/rerank and /v1/rerank

// A document or query: a string, or an object with a "text" string (Jina, Cohere).
std::optional<std::string> text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (const json* t = find_field(v, "text"); t && t->is_string()) return t->get<std::string>();
  return std::nullopt;
}

awaitable<void> rerank(EmbedApi& api, Exchange& ex, bool openai) {
  const std::string text = co_await ex.read_body();
  const json body = parse_json_object(text);
  requests::RerankRequest req;
  req.model = model_field(body);
  req.name = required_model_name(req.model, 400, "model is required");
  const json* q = find_field(body, "query");
  const auto query = q ? text_of(*q) : std::nullopt;
  if (!query || query->empty()) throw StatusError(400, "query must be a non-empty string");
  const json* docs = find_field(body, "documents");
  if (!docs || !docs->is_array() || docs->empty()) {
    throw StatusError(400, "documents must be a non-empty array of strings");
  }
  req.query = *query;
  for (const auto& d : *docs) {
    auto t = text_of(d);
    if (!t) throw StatusError(400, "documents must be a non-empty array of strings");
    req.documents.push_back(std::move(*t));
  }
  if (const int64_t top_n = int_field(body, "top_n", 0); top_n < 0) {
    throw StatusError(400, "top_n must not be negative");
  } else if (top_n > 0) {
    req.top_n = static_cast<uint32_t>(top_n);
  }
  const bool return_documents = bool_field(body, "return_documents").value_or(false);
  req.keep_alive = parse_keep_alive(body);
  const std::string model = req.model;
  const std::vector<std::string> documents = req.documents;
  auto task = api.service.rerank(std::move(req));
  auto guarded = http::until_disconnect(ex, std::move(task));
  const std::optional<requests::RerankResult> result = co_await std::move(guarded);
  if (!result) co_return;  // the client left
  const requests::RerankResult& r = *result;

  nlohmann::ordered_json out;
  out["model"] = model;
  out["object"] = "list";
  out["results"] = nlohmann::ordered_json::array();
  for (const auto& item : r.results) {
    nlohmann::ordered_json e;
    e["index"] = item.index;
    e["relevance_score"] = item.relevance_score;
    if (return_documents) e["document"] = {{"text", documents[item.index]}};
    out["results"].push_back(std::move(e));
  }
  out["usage"] = {{"prompt_tokens", r.prompt_tokens}, {"total_tokens", r.prompt_tokens}};
  std::string text_out = out.dump(-1, ' ', false, json::error_handler_t::replace);
  if (openai) text_out += '\n';
  co_await ex.respond(200, openai ? "application/json" : http::kJsonContentType,
                      std::move(text_out));
}

}  // namespace

// Failures are answered by the server, in the error shape of the path (OpenAI's under /v1/).
void add_embed_routes(http::Router& router, EmbedApi& api) {
  using http::Method;
  router.add(Method::post, "/api/embed", [&api](Exchange& ex) { return api_embed(api, ex); });
  router.add(Method::post, "/api/embeddings",
             [&api](Exchange& ex) { return api_embeddings(api, ex); });
  router.add(Method::post, "/v1/embeddings",
             [&api](Exchange& ex) { return v1_embeddings(api, ex); });
  router.add(Method::post, "/api/rerank", [&api](Exchange& ex) { return rerank(api, ex, false); });
  router.add(Method::post, "/v1/rerank", [&api](Exchange& ex) { return rerank(api, ex, true); });
}

}  // namespace vkllm::api
