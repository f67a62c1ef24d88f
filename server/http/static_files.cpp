#include "server/http/static_files.h"

#include <algorithm>
#include <cctype>
#include <string>

#include <boost/beast/core/string.hpp>

#include "server/http/exchange.h"
#include "web/embedded_assets.h"

namespace vkllm::http {
namespace {

using boost::beast::iequals;

const web::EmbeddedFile* find_asset(std::string_view name) {
  for (const auto& f : web::embedded_files()) {
    if (f.name != nullptr && name == f.name) return &f;
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Calls f(token, q) for each element of a comma-separated header list with optional ";q=".
template <typename F>
void for_each_weighted(std::string_view list, F f) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    double q = 1.0;
    const auto semi = item.find(';');
    if (semi != std::string_view::npos) {
      std::string_view params = item.substr(semi + 1);
      item = item.substr(0, semi);
      while (!params.empty()) {
        const auto next = params.find(';');
        const std::string_view p = trim(params.substr(0, next));
        params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
        if (p.size() > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
          try {
            q = std::stod(std::string(p.substr(2)));
          } catch (const std::exception&) {
            q = 0;  // an unreadable weight does not grant anything
          }
        }
      }
    }
    f(trim(item), q);
  }
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
  const std::string_view real_name = file->name;
  const auto* packed = find_asset(std::string(real_name) + ".gz");
  if (packed != nullptr) ex.add_header("Vary", "Accept-Encoding");
  const auto encoding = ex.header("Accept-Encoding");
  if (packed != nullptr && encoding && accepts_gzip(*encoding)) {
    ex.add_header("Content-Encoding", "gzip");
    file = packed;
  }
  ex.add_header("Cache-Control", real_name.starts_with("assets/")
                                     ? "public, max-age=31536000, immutable"
                                     : "no-cache");
  co_await ex.respond(200, content_type_for(real_name),
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
  if (ext == "gz") return "application/gzip";
  return "application/octet-stream";
}

bool accepts_gzip(std::string_view accept_encoding) {
  bool gzip = false, gzip_named = false, star = false;
  for_each_weighted(accept_encoding, [&](std::string_view coding, double q) {
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip")) {
      gzip_named = true;
      gzip = q > 0;
    } else if (coding == "*") {
      star = q > 0;
    }
  });
  return gzip_named ? gzip : star;
}

bool wants_html(std::string_view accept) {
  bool html = false;
  for_each_weighted(accept, [&](std::string_view type, double q) {
    if ((iequals(type, "text/html") || iequals(type, "application/xhtml+xml")) && q > 0)
      html = true;
  });
  return html;
}

boost::asio::awaitable<bool> redirect_browser_to_ui(Exchange& ex, std::string_view mount) {
  const auto accept = ex.header("Accept");
  if (!accept || !wants_html(*accept)) co_return false;
  // 302, not 301: a cached permanent redirect would outlive a change of where the UI lives.
  ex.add_header("Location", std::string(mount) + "/");
  co_await ex.respond(302, kTextContentType, "");
  co_return true;
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
