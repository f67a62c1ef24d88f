#include "server/api/oci_view.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "registry/errors.h"
#include "server/async/run_blocking.h"
#include "server/http/exchange.h"
#include "server/http/json_text.h"

namespace vkllm::api {

namespace asio = boost::asio;
using asio::awaitable;
using async::run_blocking;
using http::Exchange;
using http::Method;
using http::StatusError;
using json = nlohmann::json;
using registry::Digest;
using registry::ModelName;

namespace {

// An error in the distribution spec's shape: {"errors":[{"code","message","detail"}]}.
class OciError : public std::runtime_error {
 public:
  OciError(unsigned status, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), code(std::move(code)) {}
  unsigned status;
  std::string code;
};

std::string oci_error_body(const std::string& code, const std::string& message) {
  json e;
  e["code"] = code;
  e["message"] = message;
  e["detail"] = nullptr;
  json body;
  body["errors"] = json::array({e});
  return http::json_text(body);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<uint64_t> to_u64(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

struct Target {
  std::string ns, model;
  bool manifest = false;
  std::string reference;  // tag or digest
};

// "<ns>/<model>/manifests/<ref>" or "<ns>/<model>/blobs/<digest>" (a one-part repository
// means namespace "library").
Target parse_target(const std::string& rest) {
  Target t;
  std::string repo;
  for (const char* kind : {"/manifests/", "/blobs/"}) {
    const auto at = rest.rfind(kind);
    if (at == std::string::npos) continue;
    repo = rest.substr(0, at);
    t.manifest = std::string_view(kind) == "/manifests/";
    t.reference = rest.substr(at + std::string_view(kind).size());
    break;
  }
  if (repo.empty() || t.reference.empty()) {
    throw OciError(404, "NAME_UNKNOWN", "unknown repository path /v2/" + rest);
  }
  const auto slash = repo.find('/');
  if (slash == std::string::npos) {
    t.ns = "library";
    t.model = repo;
  } else {
    t.ns = repo.substr(0, slash);
    t.model = repo.substr(slash + 1);
  }
  if (t.model.find('/') != std::string::npos) {
    throw OciError(404, "NAME_UNKNOWN", "repository name has too many parts: " + repo);
  }
  return t;
}

// The installed model serving repository ns/model at `reference` (tag or manifest digest).
std::optional<ModelName> resolve(registry::ModelStore& store, const Target& t,
                                 const std::string& host_header) {
  const bool by_digest = t.reference.rfind("sha256:", 0) == 0;
  std::optional<ModelName> best;
  int best_rank = -1;
  for (const auto& s : store.list()) {
    const auto& n = s.name;
    if (lower(n.ns) != lower(t.ns) || lower(n.model) != lower(t.model)) continue;
    if (by_digest ? s.digest.str() != t.reference : lower(n.tag) != lower(t.reference)) continue;
    const int rank = lower(n.host) == registry::kDefaultHost ? 2
                     : lower(n.host) == lower(host_header)   ? 1
                                                             : 0;
    if (rank > best_rank) {
      best = n;
      best_rank = rank;
    }
  }
  return best;
}

awaitable<void> respond_oci_error(Exchange& ex, const OciError& e) {
  std::string body = oci_error_body(e.code, e.what());
  co_await ex.respond(e.status, "application/json; charset=utf-8", std::move(body));
}

awaitable<void> serve_manifest(Exchange& ex, ModelApi& api, const Target& t) {
  const std::string host = ex.header("Host").value_or("");
  auto found = co_await run_blocking(api.workers,
                                     [&]() -> std::optional<registry::ModelStore::ManifestBytes> {
                                       const auto name = resolve(api.store, t, host);
                                       if (!name) return std::nullopt;
                                       const auto m = api.store.manifest(*name);
                                       if (!m) return std::nullopt;
                                       return m;
                                     });
  if (!found) {
    throw OciError(404, "MANIFEST_UNKNOWN",
                   "manifest unknown: " + t.ns + "/" + t.model + ":" + t.reference);
  }
  std::string media_type(registry::media_type::kManifest);
  try {
    const auto parsed = json::parse(found->json);
    if (parsed.contains("mediaType") && parsed["mediaType"].is_string()) {
      media_type = parsed["mediaType"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  ex.add_header("Docker-Content-Digest", found->digest.str());
  ex.add_header("Docker-Distribution-API-Version", "registry/2.0");
  co_await ex.respond(200, media_type, std::move(found->json));
}

awaitable<void> serve_blob(Exchange& ex, ModelApi& api, const Target& t) {
  const auto digest = Digest::try_parse(t.reference);
  if (!digest) throw OciError(400, "DIGEST_INVALID", "invalid digest " + t.reference);
  const auto info =
      co_await run_blocking(api.workers, [&] { return api.store.blobs().info(*digest); });
  if (!info) throw OciError(404, "BLOB_UNKNOWN", "blob unknown: " + digest->str());
  const uint64_t size = info->size;
  std::optional<ByteRange> range;
  try {
    range = parse_range(ex.header("Range").value_or(""), size);
  } catch (const StatusError&) {
    ex.add_header("Content-Range", "bytes */" + std::to_string(size));
    throw OciError(416, "BLOB_UNKNOWN", "requested range not satisfiable");
  }
  const uint64_t first = range ? range->first : 0;
  const uint64_t length = range ? range->last - range->first + 1 : size;
  if (ex.method() != Method::head && length > 0) {
    // Never serve bytes that do not match their digest (a raw file changed on disk).
    try {
      co_await run_blocking(api.workers, [&] { api.store.blobs().verify(*digest); });
    } catch (const registry::RegistryError& e) {
      if (e.kind() == registry::ErrorKind::not_found) {
        throw OciError(404, "BLOB_UNKNOWN", "blob unknown: " + digest->str());
      }
      throw OciError(500, "UNKNOWN", e.message());
    }
  }
  ex.add_header("Docker-Content-Digest", digest->str());
  ex.add_header("Accept-Ranges", "bytes");
  if (range) {
    ex.add_header("Content-Range", "bytes " + std::to_string(range->first) + "-" +
                                       std::to_string(range->last) + "/" + std::to_string(size));
  }
  co_await ex.start_sized(range ? 206 : 200, "application/octet-stream", length);
  if (ex.method() == Method::head || length == 0) {
    co_await ex.finish_chunked();
    co_return;
  }
  auto reader = co_await run_blocking(api.workers, [&] {
    return std::make_shared<registry::BlobReader>(api.store.blobs().open(*digest));
  });
  constexpr uint64_t kPiece = uint64_t{1} << 20;
  std::vector<std::byte> buf(kPiece);
  uint64_t offset = first, remaining = length;
  while (remaining > 0) {
    const size_t want = static_cast<size_t>(std::min(kPiece, remaining));
    const size_t got = co_await run_blocking(
        api.workers, [&] { return reader->read_at(offset, std::span(buf).first(want)); });
    if (got == 0) throw std::runtime_error("blob " + digest->str() + " ended early");
    co_await ex.write_chunk(std::string_view(reinterpret_cast<const char*>(buf.data()), got));
    offset += got;
    remaining -= got;
  }
  co_await ex.finish_chunked();
}

}  // namespace

std::optional<ByteRange> parse_range(const std::string& header, uint64_t size) {
  if (header.empty()) return std::nullopt;
  if (header.rfind("bytes=", 0) != 0 || header.find(',') != std::string::npos) {
    return std::nullopt;  // other units or multiple ranges: answer with the whole blob
  }
  const std::string_view spec = std::string_view(header).substr(6);
  const auto dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto a = spec.substr(0, dash), b = spec.substr(dash + 1);
  ByteRange r;
  if (a.empty()) {  // suffix: the last N bytes
    const auto n = to_u64(b);
    if (!n) return std::nullopt;
    if (*n == 0 || size == 0) throw StatusError(416, "range not satisfiable");
    r.first = size - std::min(*n, size);
    r.last = size - 1;
    return r;
  }
  const auto first = to_u64(a);
  if (!first) return std::nullopt;
  if (*first >= size) throw StatusError(416, "range not satisfiable");
  r.first = *first;
  r.last = size - 1;
  if (!b.empty()) {
    const auto last = to_u64(b);
    if (!last || *last < *first) return std::nullopt;
    r.last = std::min(*last, size - 1);
  }
  return r;
}

void add_oci_view_routes(http::Router& router, ModelApi& api) {
  auto base = [](Exchange& ex) -> awaitable<void> {
    ex.add_header("Docker-Distribution-API-Version", "registry/2.0");
    co_await ex.respond(200, "application/json; charset=utf-8", "{}");
  };
  auto read = [&api](Exchange& ex) -> awaitable<void> {
    if (ex.param("rest").empty()) {
      ex.add_header("Docker-Distribution-API-Version", "registry/2.0");
      co_await ex.respond(200, "application/json; charset=utf-8", "{}");
      co_return;
    }
    std::optional<OciError> error;
    try {
      const Target t = parse_target(ex.param("rest"));
      if (t.manifest) {
        co_await serve_manifest(ex, api, t);
      } else {
        co_await serve_blob(ex, api, t);
      }
    } catch (const OciError& e) {
      error = e;
    }
    if (error && !ex.response_started()) co_await respond_oci_error(ex, *error);
  };
  auto read_only = [](Exchange& ex) -> awaitable<void> {
    co_await respond_oci_error(
        ex, OciError(405, "UNSUPPORTED", "this vkllm registry view is read-only"));
  };
  for (Method m : {Method::get, Method::head}) {
    router.add(m, "/v2", base);
    router.add(m, "/v2/*rest", read);
  }
  for (Method m : {Method::post, Method::put, Method::patch, Method::del}) {
    router.add(m, "/v2/*rest", read_only);
  }
}

}  // namespace vkllm::api
