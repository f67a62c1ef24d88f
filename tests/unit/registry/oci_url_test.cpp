#include "registry/oci_url.h"

#include <gtest/gtest.h>

#include "registry/oci_error.h"

namespace vkllm::registry {
namespace {

TEST(OciUrl, ParsesSchemeHostPortAndTarget) {
  auto url = OciUrl::parse("https://Registry.Ollama.AI/v2/library/llama/manifests/latest");
  EXPECT_EQ(url.scheme, "https");
  EXPECT_EQ(url.host, "registry.ollama.ai");
  EXPECT_EQ(url.port, 443);
  EXPECT_EQ(url.target, "/v2/library/llama/manifests/latest");
  EXPECT_EQ(url.authority(), "registry.ollama.ai");

  auto local = OciUrl::parse("http://127.0.0.1:5000");
  EXPECT_EQ(local.port, 5000);
  EXPECT_EQ(local.target, "/");
  EXPECT_EQ(local.str(), "http://127.0.0.1:5000/");

  auto v6 = OciUrl::parse("http://[::1]:8080/x?y=1#frag");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 8080);
  EXPECT_EQ(v6.target, "/x?y=1");
  EXPECT_EQ(v6.authority(), "[::1]:8080");
}

TEST(OciUrl, RejectsMalformedUrlsWithTheReason) {
  for (const char* bad :
       {"registry.ollama.ai/v2", "ftp://host/x", "http://:80/", "http://h:0/", "http://h:65536/",
        "http://h:12a/", "http://[::1/", "http://u@h/", "http://h/a b"}) {
    try {
      OciUrl::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const OciError& e) {
      EXPECT_EQ(e.kind(), OciErrorKind::protocol);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(OciUrl, ResolvesEveryKindOfLocation) {
  auto base = OciUrl::parse("http://127.0.0.1:5000/v2/ns/m/blobs/uploads/?x=1");
  EXPECT_EQ(base.resolve("https://r2.example.com/bucket/obj?sig=a").str(),
            "https://r2.example.com/bucket/obj?sig=a");
  EXPECT_EQ(base.resolve("//other:81/p").str(), "http://other:81/p");
  EXPECT_EQ(base.resolve("/v2/ns/m/blobs/uploads/uuid?_state=s").str(),
            "http://127.0.0.1:5000/v2/ns/m/blobs/uploads/uuid?_state=s");
  EXPECT_EQ(base.resolve("uuid2").str(), "http://127.0.0.1:5000/v2/ns/m/blobs/uploads/uuid2");
  EXPECT_THROW(base.resolve(""), OciError);
}

TEST(OciUrl, SameOriginNeedsSchemeHostAndPort) {
  auto a = OciUrl::parse("http://127.0.0.1:5000/a");
  EXPECT_TRUE(a.same_origin(OciUrl::parse("http://127.0.0.1:5000/b?c")));
  EXPECT_FALSE(a.same_origin(OciUrl::parse("http://127.0.0.1:5001/a")));
  EXPECT_FALSE(a.same_origin(OciUrl::parse("https://127.0.0.1:5000/a")));
  EXPECT_FALSE(a.same_origin(OciUrl::parse("http://localhost:5000/a")));
}

TEST(OciUrl, AddQueryPercentEncodesValues) {
  auto url = OciUrl::parse("https://auth.example/token");
  url.add_query("service", "registry.example");
  url.add_query("scope", "repository:ns/m:pull,push");
  EXPECT_EQ(url.target, "/token?service=registry.example&scope=repository%3Ans%2Fm%3Apull%2Cpush");
  EXPECT_EQ(percent_encode("a b~_.-Z9"), "a%20b~_.-Z9");
}

TEST(OciUrl, RecognisesLoopbackHosts) {
  for (const char* host : {"localhost", "localhost:5000", "LOCALHOST", "127.0.0.1", "127.0.0.1:80",
                           "127.1.2.3:9", "[::1]", "[::1]:5000", "::1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"registry.ollama.ai", "10.0.0.1:5000", "127.0.0.1.example.com",
                           "localhost.example", "[::2]", "128.0.0.1", ""}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

}  // namespace
}  // namespace vkllm::registry
