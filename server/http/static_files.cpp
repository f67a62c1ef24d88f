#include "server/http/static_files.h"

#include <string>

#include "server/http/exchange.h"
#include "web/embedded_assets.h"

namespace vkllm::http {
namespace {

const web::EmbeddedFile* find_asset(std::string_view name) {
  for (const auto& f : web::embedded_files()) {
    if (f.name != nullptr && name == f.name) return &f;
  }
  return nullptr;
}

boost::asio::awaitable<void> serve_asset(Exchange& ex) {
  std::string name = ex.param("path");
  if (name.empty() || name.back() == '/') name += "index.html";
  const auto* file = find_asset(name);
  // Client-side routes (no extension) get the app shell; missing assets are real 404s.
  if (file == nullptr && name.find('.') == std::string::npos) file = find_asset("index.html");
  if (file == nullptr) {
    co_await ex.respond(404, kTextContentType, "404 page not found");
    co_return;
  }
  ex.add_header("Cache-Control",
                name == "index.html" || file->name == std::string_view("index.html")
                    ? "no-cache"
                    : "public, max-age=3600");
  co_await ex.respond(200, content_type_for(file->name),
                      std::string(reinterpret_cast<const char*>(file->data), file->size));
}

}  // namespace

std::string_view content_type_for(std::string_view name) {
  const auto dot = name.rfind('.');
  const std::string_view ext = dot == std::string_view::npos ? "" : name.substr(dot + 1);
  if (ext == "html") return "text/html; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "json" || ext == "map") return "application/json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  if (ext == "woff2") return "font/woff2";
  if (ext == "txt") return "text/plain; charset=utf-8";
  if (ext == "wasm") return "application/wasm";
  return "application/octet-stream";
}

void add_static_routes(Router& router, std::string_view mount) {
  const std::string base(mount);
  auto redirect = [base](Exchange& ex) -> boost::asio::awaitable<void> {
    ex.add_header("Location", base + "/");
    co_await ex.respond(301, kTextContentType, "");
  };
  for (Method m : {Method::get, Method::head}) {
    router.add(m, base, redirect);
    router.add(m, base + "/*path", serve_asset);
  }
}

}  // namespace vkllm::http
