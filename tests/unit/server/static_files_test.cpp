// The UI's serving rules: which clients get gzip, which get redirected from "/" to the UI, the
// content types, and that the embedded bundle is complete (index.html's assets are all there,
// each compressible file with its .gz twin).
#include <gtest/gtest.h>

// GCC 12 warns inside <regex> (std::function members "maybe uninitialized") wherever it is used.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop
#include <string>

#include "server/http/static_files.h"
#include "web/embedded_assets.h"

using namespace vkllm;

namespace {

TEST(StaticFiles, AcceptsGzip) {
  EXPECT_TRUE(http::accepts_gzip("gzip"));
  EXPECT_TRUE(http::accepts_gzip("gzip, deflate, br, zstd"));  // Chromium
  EXPECT_TRUE(http::accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(http::accepts_gzip("*"));
  EXPECT_TRUE(http::accepts_gzip("x-gzip"));
  EXPECT_FALSE(http::accepts_gzip(""));
  EXPECT_FALSE(http::accepts_gzip("identity"));
  EXPECT_FALSE(http::accepts_gzip("deflate, br"));
  EXPECT_FALSE(http::accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(http::accepts_gzip("gzip;q=0.000, *;q=1"));  // named gzip refusal wins over *
  EXPECT_FALSE(http::accepts_gzip("*;q=0"));
  EXPECT_FALSE(http::accepts_gzip("gzip;q=junk"));
}

TEST(StaticFiles, WantsHtmlOnlyForPageNavigation) {
  // What browsers send when opening a page.
  EXPECT_TRUE(http::wants_html(
      "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"));
  EXPECT_TRUE(http::wants_html("TEXT/HTML"));
  // curl, the ollama libraries, load balancers' health checks.
  EXPECT_FALSE(http::wants_html("*/*"));
  EXPECT_FALSE(http::wants_html("application/json"));
  EXPECT_FALSE(http::wants_html(""));
  EXPECT_FALSE(http::wants_html("text/html;q=0, */*"));
  EXPECT_FALSE(http::wants_html("text/plain"));
}

TEST(StaticFiles, ContentTypes) {
  EXPECT_EQ(http::content_type_for("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(http::content_type_for("assets/index-abc.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(http::content_type_for("assets/index-abc.css"), "text/css; charset=utf-8");
  EXPECT_EQ(http::content_type_for("icon.svg"), "image/svg+xml");
  EXPECT_EQ(http::content_type_for("x.unknown"), "application/octet-stream");
  EXPECT_EQ(http::content_type_for("noext"), "application/octet-stream");
}

bool embedded(const std::string& name) {
  for (const auto& f : web::embedded_files())
    if (f.name == name) return true;
  return false;
}

TEST(StaticFiles, EmbeddedBundleIsComplete) {
  std::string index;
  for (const auto& f : web::embedded_files())
    if (std::string_view(f.name) == "index.html")
      index.assign(reinterpret_cast<const char*>(f.data), f.size);
  ASSERT_FALSE(index.empty()) << "web/dist/index.html is not embedded";
  const std::regex ref(R"re((?:src|href)="\./(assets/[^"]+)")re");
  int refs = 0;
  for (std::sregex_iterator it(index.begin(), index.end(), ref), end; it != end; ++it) {
    const std::string asset = (*it)[1];
    EXPECT_TRUE(embedded(asset)) << asset << " is referenced by index.html but not embedded";
    EXPECT_TRUE(embedded(asset + ".gz")) << asset << " has no precompressed twin";
    ++refs;
  }
  EXPECT_GE(refs, 2) << "index.html should load a script and a stylesheet: " << index;
  EXPECT_TRUE(embedded("index.html.gz"));
}

}  // namespace
