#include "server/http/router.h"

#include <stdexcept>

namespace vkllm::http {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// Priority when several routes of one method match, compared segment by segment: a literal
// beats a parameter beats a rest-of-path; a route that ends without a rest-of-path beats one
// that still has it.
std::vector<int> specificity(const std::vector<std::string>& segments) {
  std::vector<int> score;
  for (const auto& s : segments) score.push_back(s[0] == '*' ? 0 : s[0] == ':' ? 1 : 2);
  if (segments.empty() || segments.back()[0] != '*') score.push_back(3);
  return score;
}

}  // namespace

Method parse_method(std::string_view name) {
  if (name == "GET") return Method::get;
  if (name == "HEAD") return Method::head;
  if (name == "POST") return Method::post;
  if (name == "PUT") return Method::put;
  if (name == "PATCH") return Method::patch;
  if (name == "DELETE") return Method::del;
  if (name == "OPTIONS") return Method::options;
  return Method::other;
}

std::string_view method_name(Method m) {
  switch (m) {
    case Method::get:
      return "GET";
    case Method::head:
      return "HEAD";
    case Method::post:
      return "POST";
    case Method::put:
      return "PUT";
    case Method::patch:
      return "PATCH";
    case Method::del:
      return "DELETE";
    case Method::options:
      return "OPTIONS";
    case Method::other:
      break;
  }
  return "OTHER";
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  if (path.empty() || path == "/") return out;
  if (path.front() == '/') path.remove_prefix(1);
  size_t start = 0;
  for (;;) {
    const auto slash = path.find('/', start);
    out.push_back(percent_decode(path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start)));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

void Router::add(Method method, std::string_view pattern, Handler handler) {
  if (pattern.empty() || pattern.front() != '/') {
    throw std::invalid_argument("route pattern must start with '/': " + std::string(pattern));
  }
  Route r{method, std::string(pattern), {}, std::move(handler)};
  if (pattern != "/") {
    size_t start = 1;
    for (;;) {
      const auto slash = pattern.find('/', start);
      std::string seg(pattern.substr(
          start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
      if (seg.empty()) throw std::invalid_argument("empty segment in route " + r.pattern);
      if ((seg[0] == ':' || seg[0] == '*') && seg.size() == 1) {
        throw std::invalid_argument("unnamed parameter in route " + r.pattern);
      }
      if (seg[0] == '*' && slash != std::string_view::npos) {
        throw std::invalid_argument("'*' parameter must be last in route " + r.pattern);
      }
      r.segments.push_back(std::move(seg));
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
  }
  for (const auto& existing : routes_) {
    if (existing.method == method && existing.segments == r.segments) {
      throw std::invalid_argument("duplicate route " + std::string(method_name(method)) + " " +
                                  r.pattern);
    }
  }
  routes_.push_back(std::move(r));
}

bool Router::match_route(const Route& r, const std::vector<std::string>& path, PathParams& out) {
  out.clear();
  const auto& segs = r.segments;
  for (size_t i = 0; i < segs.size(); ++i) {
    const auto& s = segs[i];
    if (s[0] == '*') {
      std::string rest;
      for (size_t j = i; j < path.size(); ++j) rest += (j > i ? "/" : "") + path[j];
      out[s.substr(1)] = std::move(rest);
      return true;
    }
    if (i >= path.size()) return false;
    if (s[0] == ':') {
      if (path[i].empty()) return false;
      out[s.substr(1)] = path[i];
    } else if (s != path[i]) {
      return false;
    }
  }
  return segs.size() == path.size();
}

RouteMatch Router::match(Method method, std::string_view path) const {
  const auto parts = split_path(path);
  RouteMatch result;
  std::vector<int> best;
  PathParams params;
  for (const auto& r : routes_) {
    if (!match_route(r, parts, params)) continue;
    if (r.method != method) {
      if (result.kind == RouteMatch::Kind::not_found) {
        result.kind = RouteMatch::Kind::method_not_allowed;
      }
      continue;
    }
    auto score = specificity(r.segments);
    if (result.kind != RouteMatch::Kind::found || score > best) {
      best = std::move(score);
      result.kind = RouteMatch::Kind::found;
      result.handler = &r.handler;
      result.params = params;
    }
  }
  return result;
}

}  // namespace vkllm::http
