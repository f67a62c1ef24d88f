// Maps (method, path) to a handler. Patterns are '/'-separated segments: literal text,
// ":name" (exactly one non-empty segment) or, as the last segment, "*name" (the rest of the
// path, possibly with slashes, possibly empty). Literal segments win over parameters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "server/http/method.h"

namespace vkllm::http {

class Exchange;
using Handler = std::function<boost::asio::awaitable<void>(Exchange&)>;
using PathParams = std::map<std::string, std::string, std::less<>>;

struct RouteMatch {
  enum class Kind { found, not_found, method_not_allowed };
  Kind kind = Kind::not_found;
  const Handler* handler = nullptr;
  PathParams params;
};

class Router {
 public:
  // Throws std::invalid_argument for a malformed pattern or a duplicate (method, pattern).
  void add(Method method, std::string_view pattern, Handler handler);
  // `path` is the request path without the query; percent-escapes are decoded per segment.
  RouteMatch match(Method method, std::string_view path) const;

 private:
  struct Route {
    Method method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
  };
  static bool match_route(const Route& r, const std::vector<std::string>& path, PathParams& out);
  std::vector<Route> routes_;
};

// Splits "/a/b/c" into {"a","b","c"} decoding %XX escapes; "/" → {}; a trailing slash gives a
// final empty segment ("/v2/" → {"v2",""}).
std::vector<std::string> split_path(std::string_view path);

}  // namespace vkllm::http
