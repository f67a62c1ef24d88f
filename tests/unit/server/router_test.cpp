#include "server/http/router.h"

#include <gtest/gtest.h>

#include "server/http/exchange.h"

using vkllm::http::Exchange;
using vkllm::http::Method;
using vkllm::http::RouteMatch;
using vkllm::http::Router;
using vkllm::http::split_path;

namespace {

// Each handler is told apart by a tag it writes when called; matching never calls them, so the
// tag is recovered by comparing handler addresses.
Router make_router(std::map<std::string, const vkllm::http::Handler*>& by_name) {
  Router r;
  auto h = [](Exchange&) -> boost::asio::awaitable<void> { co_return; };
  r.add(Method::get, "/", h);
  r.add(Method::get, "/api/tags", h);
  r.add(Method::head, "/api/tags", h);
  r.add(Method::post, "/api/blobs/:digest", h);
  r.add(Method::head, "/api/blobs/:digest", h);
  r.add(Method::get, "/v2/*rest", h);
  r.add(Method::get, "/v2/special/info", h);
  r.add(Method::get, "/ui", h);
  r.add(Method::get, "/ui/*path", h);
  for (const char* p : {"/", "/api/tags", "/v2/*rest", "/v2/special/info", "/ui", "/ui/*path"}) {
    by_name[p] = r.match(Method::get, p[1] == 0 ? "/" : p).handler;
  }
  return r;
}

TEST(Router, MatchesLiteralRoutesByMethod) {
  std::map<std::string, const vkllm::http::Handler*> names;
  const Router r = make_router(names);
  EXPECT_EQ(r.match(Method::get, "/").kind, RouteMatch::Kind::found);
  EXPECT_EQ(r.match(Method::get, "/api/tags").kind, RouteMatch::Kind::found);
  EXPECT_EQ(r.match(Method::head, "/api/tags").kind, RouteMatch::Kind::found);
  EXPECT_EQ(r.match(Method::post, "/api/tags").kind, RouteMatch::Kind::method_not_allowed);
  EXPECT_EQ(r.match(Method::get, "/api/nope").kind, RouteMatch::Kind::not_found);
  EXPECT_EQ(r.match(Method::get, "/api/tags/extra").kind, RouteMatch::Kind::not_found);
  EXPECT_EQ(r.match(Method::get, "/api").kind, RouteMatch::Kind::not_found);
}

TEST(Router, CapturesAndDecodesParameters) {
  std::map<std::string, const vkllm::http::Handler*> names;
  const Router r = make_router(names);
  auto m = r.match(Method::post, "/api/blobs/sha256%3Aabc");
  ASSERT_EQ(m.kind, RouteMatch::Kind::found);
  EXPECT_EQ(m.params.at("digest"), "sha256:abc");
  EXPECT_EQ(r.match(Method::post, "/api/blobs/").kind, RouteMatch::Kind::not_found);
  EXPECT_EQ(r.match(Method::post, "/api/blobs/a/b").kind, RouteMatch::Kind::not_found);
  EXPECT_EQ(r.match(Method::get, "/api/blobs/x").kind, RouteMatch::Kind::method_not_allowed);
}

TEST(Router, RestParameterTakesSlashesAndLiteralsWin) {
  std::map<std::string, const vkllm::http::Handler*> names;
  const Router r = make_router(names);
  auto m = r.match(Method::get, "/v2/library/m/manifests/latest");
  ASSERT_EQ(m.kind, RouteMatch::Kind::found);
  EXPECT_EQ(m.params.at("rest"), "library/m/manifests/latest");
  EXPECT_EQ(m.handler, names["/v2/*rest"]);
  EXPECT_EQ(r.match(Method::get, "/v2/").params.at("rest"), "");
  EXPECT_EQ(r.match(Method::get, "/v2/special/info").handler, names["/v2/special/info"]);
  EXPECT_NE(names["/v2/special/info"], names["/v2/*rest"]);
  EXPECT_EQ(r.match(Method::get, "/ui").handler, names["/ui"]);
  EXPECT_EQ(r.match(Method::get, "/ui/app.js").handler, names["/ui/*path"]);
  EXPECT_EQ(r.match(Method::get, "/ui/a/b.css").params.at("path"), "a/b.css");
}

TEST(Router, RejectsBadPatterns) {
  Router r;
  auto h = [](Exchange&) -> boost::asio::awaitable<void> { co_return; };
  EXPECT_THROW(r.add(Method::get, "nope", h), std::invalid_argument);
  EXPECT_THROW(r.add(Method::get, "/a//b", h), std::invalid_argument);
  EXPECT_THROW(r.add(Method::get, "/a/:", h), std::invalid_argument);
  EXPECT_THROW(r.add(Method::get, "/a/*rest/b", h), std::invalid_argument);
  r.add(Method::get, "/a/:x", h);
  EXPECT_THROW(r.add(Method::get, "/a/:x", h), std::invalid_argument);
  EXPECT_NO_THROW(r.add(Method::post, "/a/:x", h));
}

TEST(Router, SplitPath) {
  EXPECT_TRUE(split_path("/").empty());
  EXPECT_EQ(split_path("/a/b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_path("/v2/"), (std::vector<std::string>{"v2", ""}));
  EXPECT_EQ(split_path("/a%2Fb/c%zz"), (std::vector<std::string>{"a/b", "c%zz"}));
}

}  // namespace
