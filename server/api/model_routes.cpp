#include "server/api/model_routes.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>

#include "registry/errors.h"
#include "registry/parameters.h"
#include "server/api/details_json.h"
#include "server/api/json_request.h"
#include "server/api/model_list.h"
#include "server/api/time_format.h"
#include "server/async/run_blocking.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"
#include "server/http/private_paths.h"
#include "server/http/status_error.h"
#include "server/models/gguf_summary.h"
#include "server/models/model_create.h"
#include "server/models/model_facts.h"
#include "server/models/model_reference.h"

namespace vkllm::api {

namespace asio = boost::asio;
using asio::awaitable;
using async::run_blocking;
using http::Exchange;
using http::Method;
using http::StatusError;
using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using models::CreatePlan;
using models::parse_blob_digest;
using models::parse_model_reference;
using registry::Digest;
using registry::ErrorKind;
using registry::ModelName;
using registry::RegistryError;

namespace {

std::string blob_path(const registry::BlobStore& blobs, const Digest& d) {
  if (const auto p = blobs.stored_path(d)) return p->string();
  return (blobs.root() / "blobs" / d.file_name()).string();
}

json show_body(registry::ModelStore& store, const ModelName& name, bool verbose,
               const std::optional<std::string>& system, const ojson& options) {
  registry::ModelShow m;
  try {
    m = store.show(name);
  } catch (const RegistryError& e) {
    if (e.kind() == ErrorKind::not_found) {
      throw StatusError(404, "model '" + name.display() + "' not found");
    }
    throw;
  }
  const auto summary = models::summary_of(store, m);
  const models::GgufSummary* g = summary.get();
  json j;
  if (!m.licenses.empty()) {
    std::string joined;
    for (size_t i = 0; i < m.licenses.size(); ++i) joined += (i ? "\n" : "") + m.licenses[i];
    j["license"] = joined;
  }
  j["modelfile"] =
      m.modelfile([&](const Digest& d) { return blob_path(store.blobs(), d); }, system, options);
  j["parameters"] = m.parameters_text();
  if (m.template_text) {
    j["template"] = *m.template_text;
  } else if (g && !g->chat_template.empty()) {
    j["template"] = g->chat_template;
  } else {
    j["template"] = "{{ .Prompt }}";
  }
  const std::string shown_system = system.value_or(m.system);
  if (!shown_system.empty()) j["system"] = shown_system;
  j["details"] = details_json(m.details, g, false);
  if (!m.messages.empty()) {
    json msgs = json::array();
    for (const auto& msg : m.messages)
      msgs.push_back({{"role", msg.role}, {"content", msg.content}});
    j["messages"] = std::move(msgs);
  }
  j["model_info"] = g ? json(g->show_model_info(verbose)) : json::object();
  if (!m.projectors.empty()) {
    try {
      j["projector_info"] = json(
          models::read_gguf_summary(store.blobs(), m.projectors.front())->show_model_info(verbose));
    } catch (const std::exception&) {
    }
  }
  if (g && !g->tensors.empty()) j["tensors"] = g->tensors;
  j["capabilities"] = models::capabilities_of(m, g).names;
  j["modified_at"] = rfc3339_local(m.modified_at);
  if (!m.requires_version.empty()) j["requires"] = m.requires_version;
  return j;
}

awaitable<json> read_json(Exchange& ex) {
  std::string body = co_await ex.read_body();
  co_return parse_json_object(body);
}

awaitable<void> respond_json(Exchange& ex, const json& j) {
  std::string body = http::json_text(j);
  co_await ex.respond(200, http::kJsonContentType, std::move(body));
}

// A relative, clean path as create's `files` keys must be.
bool is_clean_relative(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.find('\\') != std::string::npos) return false;
  const std::filesystem::path path(p);
  for (const auto& part : path) {
    if (part == ".." || part == ".") return false;
  }
  return path.lexically_normal().string() == p;
}

std::vector<std::pair<std::string, Digest>> file_map(const json& req, const char* key) {
  std::vector<std::pair<std::string, Digest>> out;
  const json* files = find_field(req, key);
  if (files == nullptr) return out;
  if (!files->is_object()) {
    throw StatusError(400, std::string("json: cannot unmarshal into Go struct field .") + key +
                               " of type map[string]string");
  }
  for (auto it = files->begin(); it != files->end(); ++it) {
    if (!is_clean_relative(it.key())) throw StatusError(400, "file path must be relative");
    if (!it.value().is_string() || it.value().get<std::string>().empty()) {
      throw StatusError(400, "invalid digest format");
    }
    out.emplace_back(it.key(), parse_blob_digest(it.value().get<std::string>()));
  }
  return out;
}

CreatePlan plan_create(const json& req) {
  CreatePlan plan;
  const auto name = parse_model_reference(model_field(req));
  if (!name) throw StatusError(400, "invalid model name");
  plan.request.name = *name;
  if (const auto from = string_field(req, "from"); from && !from->empty()) {
    const auto parsed = parse_model_reference(*from);
    if (!parsed) throw StatusError(400, "invalid model name");
    plan.request.from = *parsed;
  }
  for (auto& [path, digest] : file_map(req, "files")) plan.gguf_files.push_back(digest);
  for (auto& [path, digest] : file_map(req, "adapters")) plan.adapters.push_back(digest);
  for (auto& [path, digest] : file_map(req, "draft_files")) plan.draft_files.push_back(digest);
  if (const auto t = string_field(req, "template")) plan.request.template_text = *t;
  if (const auto s = string_field(req, "system")) plan.request.system = *s;
  if (const json* lic = find_field(req, "license")) {
    if (lic->is_string()) {
      plan.request.licenses.push_back(lic->get<std::string>());
    } else if (lic->is_array()) {
      for (const auto& l : *lic) {
        if (!l.is_string()) throw StatusError(400, "license must be a string or a list of strings");
        plan.request.licenses.push_back(l.get<std::string>());
      }
    } else {
      throw StatusError(400, "license must be a string or a list of strings");
    }
  }
  if (const json* p = find_field(req, "parameters")) {
    if (!p->is_object()) throw StatusError(400, "parameters must be an object");
    plan.request.parameters = registry::normalize_parameters(ojson::parse(p->dump()));
  }
  if (const json* msgs = find_field(req, "messages")) {
    if (!msgs->is_array()) throw StatusError(400, "messages must be a list");
    for (const auto& m : *msgs) {
      if (!m.is_object()) throw StatusError(400, "each message must be an object");
      plan.request.messages.push_back(
          {string_field(m, "role").value_or(""), string_field(m, "content").value_or("")});
    }
  }
  if (const auto r = string_field(req, "renderer")) plan.request.renderer = *r;
  if (const auto p = string_field(req, "parser")) plan.request.parser = *p;
  if (const auto r = string_field(req, "requires")) plan.request.requires_version = *r;
  std::string quantize = string_field(req, "quantize").value_or("");
  if (quantize.empty()) quantize = string_field(req, "quantization").value_or("");
  if (!quantize.empty()) plan.quantize = models::parse_quantize_type(quantize);
  if (const auto mf = string_field(req, "modelfile"); mf && !mf->empty()) {
    models::apply_modelfile(plan, *mf);
  }
  // Without a draft that is the refusal (as Ollama checks it first), else the type must parse.
  if (const auto dq = string_field(req, "draft_quantize"); dq && !dq->empty()) {
    if (plan.draft_files.empty() && plan.draft_server_files.empty() && !plan.draft_from) {
      throw http::StatusError(400, "--draft-quantize requires a DRAFT model");
    }
    plan.draft_quantize = models::parse_quantize_type(*dq);
  }
  models::check_create_plan(plan);
  return plan;
}

// (A plain function: GCC 12 mis-destroys braced aggregate temporaries inside coroutines.)
TransferRequest transfer_request(const json& req, const std::string& model);

}  // namespace

registry::ModelName parse_model_name(const std::string& text) {
  const auto n = parse_model_reference(text);
  if (!n) throw StatusError(400, "invalid model name");
  return *n;
}

namespace {
TransferRequest transfer_request(const json& req, const std::string& model) {
  TransferRequest t;
  t.name = parse_model_name(model);
  t.insecure = bool_field(req, "insecure").value_or(false);
  return t;
}
}  // namespace

void add_model_routes(http::Router& router, ModelApi& api) {
  http::hide_path(api.store.root());  // error messages never show where the store lives
  auto list = make_model_list(api.store);

  auto tags = [&api, list](Exchange& ex) -> awaitable<void> {
    if (auto body = list->current_body()) {  // nothing changed: no trip to the workers
      co_await ex.respond(200, http::kJsonContentType, *body);
      co_return;
    }
    // A client that left while the request queued costs no listing.
    auto gone = std::make_shared<std::atomic<bool>>(false);
    ex.on_disconnect([gone] { *gone = true; });
    // Plain pointers: GCC 12 destroys a lambda argument of a co_await twice, which would drop
    // a captured shared_ptr's count once too often. Both outlive the call.
    models::ListingCache* cache = list.get();
    const std::atomic<bool>* left = gone.get();
    auto body = co_await run_blocking(api.workers, [cache, left] {
      return *left ? std::shared_ptr<const std::string>() : cache->body();
    });
    if (!body) co_return;
    co_await ex.respond(200, http::kJsonContentType, *body);
  };
  router.add(Method::get, "/api/tags", tags);
  router.add(Method::head, "/api/tags", tags);

  router.add(Method::post, "/api/show", [&api](Exchange& ex) -> awaitable<void> {
    const json req = co_await read_json(ex);
    const std::string model = model_field(req);
    if (model.empty()) throw StatusError(400, "model is required");
    const ModelName name = parse_model_name(model);
    const bool verbose = bool_field(req, "verbose").value_or(false);
    const auto system = string_field(req, "system");
    ojson options = ojson::object();
    if (const json* o = find_field(req, "options"); o != nullptr && o->is_object()) {
      options = ojson::parse(o->dump());
    }
    const json body = co_await run_blocking(
        api.workers, [&] { return show_body(api.store, name, verbose, system, options); });
    co_await respond_json(ex, body);
  });

  router.add(Method::post, "/api/copy", [&api, list](Exchange& ex) -> awaitable<void> {
    const json req = co_await read_json(ex);
    const std::string src_text = string_field(req, "source").value_or("");
    const std::string dst_text = string_field(req, "destination").value_or("");
    const auto src = parse_model_reference(src_text);
    if (!src) throw StatusError(400, "source \"" + src_text + "\" is invalid");
    const auto dst = parse_model_reference(dst_text);
    if (!dst) throw StatusError(400, "destination \"" + dst_text + "\" is invalid");
    co_await run_blocking(api.workers, [&] {
      if (!api.store.find(*src)) throw StatusError(404, "model \"" + src_text + "\" not found");
      if (src->same_model(*dst)) return;
      api.store.copy(*src, *dst);
      list->remember(*dst);
    });
    co_await ex.respond(200, "", "");
  });

  router.add(Method::del, "/api/delete", [&api](Exchange& ex) -> awaitable<void> {
    const json req = co_await read_json(ex);
    const std::string text = model_field(req);
    const auto name = parse_model_reference(text);
    if (!name) throw StatusError(400, "name \"" + text + "\" is invalid");
    const bool removed =
        co_await run_blocking(api.workers, [&] { return api.store.remove(*name); });
    if (!removed) throw StatusError(404, "model '" + text + "' not found");
    co_await ex.respond(200, "", "");
  });

  router.add(Method::head, "/api/blobs/:digest", [&api](Exchange& ex) -> awaitable<void> {
    const Digest d = parse_blob_digest(ex.param("digest"));
    const bool present = co_await run_blocking(api.workers, [&] { return api.store.has_blob(d); });
    if (!present) throw StatusError(404, "blob \"" + d.str() + "\" not found");
    co_await ex.respond(200, "", "");
  });

  router.add(Method::post, "/api/blobs/:digest", [&api](Exchange& ex) -> awaitable<void> {
    const Digest d = parse_blob_digest(ex.param("digest"));
    if (co_await run_blocking(api.workers, [&] { return api.store.has_blob(d); })) {
      co_await ex.respond(200, "", "");
      co_return;
    }
    // (Through a pointer: results crossing co_spawn must be default-constructible.)
    auto writer = co_await run_blocking(api.workers, [&] {
      return std::make_unique<registry::BlobWriter>(api.store.blobs().begin_write());
    });
    constexpr size_t kBatch = size_t{4} << 20;
    std::vector<char> batch(kBatch);
    size_t filled = 0;
    for (;;) {
      const size_t n = co_await ex.read_body_some(std::span(batch).subspan(filled));
      filled += n;
      if (filled == batch.size() || (n == 0 && filled > 0)) {
        const std::string_view piece(batch.data(), filled);
        co_await run_blocking(api.workers, [&] { writer->write(piece); });
        filled = 0;
      }
      if (n == 0) break;
    }
    co_await run_blocking(api.workers, [&] { api.store.commit_blob(*writer, d); });
    co_await ex.respond(201, "", "");
  });

  router.add(Method::post, "/api/create", [&api, list](Exchange& ex) -> awaitable<void> {
    const json req = co_await read_json(ex);
    const bool stream = bool_field(req, "stream").value_or(true);
    auto plan = std::make_shared<CreatePlan>(plan_create(req));
    // Named first: GCC 12 destroys a temporary std::function argument of a co_await twice.
    ProgressWork work = [&api, plan, list](const Emit& emit, std::stop_token stop) {
      models::PullFn pull;
      if (api.pull) {
        pull = [&](const ModelName& name) {
          TransferRequest from;
          from.name = name;
          api.pull(from, emit, stop);
        };
      }
      // Ollama's quantization lines carry a placeholder digest (19+ characters: the CLI keys its
      // progress bars by digest) and byte counts.
      models::QuantizeProgress quantizing = [&](const std::string& line, uint64_t done,
                                                uint64_t total) {
        json j = status_line(line);
        j["digest"] = "0000000000000000000";
        j["total"] = total;
        j["completed"] = done;
        emit(j);
      };
      models::create_model(
          api.store, *plan, pull, [&](const std::string& line) { emit(status_line(line)); },
          quantizing, stop);
      list->remember(plan->request.name);  // computed now, not by the next listing
    };
    co_await run_with_progress(ex, api.transfers, stream, std::move(work));
  });

  auto transfer = [&api, list](bool is_pull) {
    return [&api, is_pull, list](Exchange& ex) -> awaitable<void> {
      const json req = co_await read_json(ex);
      const std::string model = model_field(req);
      if (model.empty())
        throw StatusError(400, is_pull ? "invalid model name" : "model is required");
      const TransferRequest t = transfer_request(req, model);
      const bool stream = bool_field(req, "stream").value_or(true);
      const TransferFn& fn = is_pull ? api.pull : api.push;
      if (!fn) throw StatusError(501, std::string(is_pull ? "pull" : "push") + " is not available");
      ProgressWork work = [fn, t, list, is_pull](const Emit& emit, std::stop_token stop) {
        fn(t, emit, stop);
        if (is_pull && !stop.stop_requested()) list->remember(t.name);
      };
      co_await run_with_progress(ex, api.transfers, stream, std::move(work));
    };
  };
  router.add(Method::post, "/api/pull", transfer(true));
  router.add(Method::post, "/api/push", transfer(false));
}

}  // namespace vkllm::api
