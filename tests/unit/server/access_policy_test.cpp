#include "server/http/access_policy.h"

#include <gtest/gtest.h>

using vkllm::http::HostPolicy;
using vkllm::http::is_cross_origin;
using vkllm::http::OriginPolicy;

namespace {

TEST(OriginPolicy, DefaultsAllowLocalOriginsAndAppSchemes) {
  const OriginPolicy p;
  for (const char* ok :
       {"http://localhost", "https://localhost", "http://localhost:3000", "https://LOCALHOST:8443",
        "http://127.0.0.1:8080", "http://0.0.0.0", "app://anything", "file://", "tauri://localhost",
        "vscode-webview://abc", "vscode-file://vscode-app"}) {
    EXPECT_TRUE(p.allows(ok)) << ok;
  }
  for (const char* bad :
       {"http://example.com", "http://localhost.evil.com", "https://127.0.0.1.evil.com",
        "chrome-extension://abc", "null", "http://localhostx"}) {
    EXPECT_FALSE(p.allows(bad)) << bad;
  }
  EXPECT_FALSE(p.allows_all());
}

TEST(OriginPolicy, ExtraOriginsExactPrefixSuffixAndInfix) {
  const OriginPolicy p(
      {"https://app.example.com", "chrome-extension://*", "*.trusted.org", "http://a*z"});
  EXPECT_TRUE(p.allows("https://app.example.com"));
  EXPECT_TRUE(p.allows("HTTPS://APP.EXAMPLE.COM"));
  EXPECT_FALSE(p.allows("https://app.example.com.evil"));
  EXPECT_TRUE(p.allows("chrome-extension://abcdef"));
  EXPECT_TRUE(p.allows("https://www.trusted.org"));
  EXPECT_FALSE(p.allows("https://www.trusted.org.evil"));
  EXPECT_TRUE(p.allows("http://abcz"));
  EXPECT_FALSE(p.allows("http://abcy"));
}

TEST(OriginPolicy, StarAllowsEverything) {
  const OriginPolicy p({"*"});
  EXPECT_TRUE(p.allows_all());
  EXPECT_TRUE(p.allows("http://anything.example"));
}

TEST(OriginPolicy, RejectsEntriesOllamaRefusesToStartWith) {
  EXPECT_THROW(OriginPolicy({"example.com"}), std::invalid_argument);
  EXPECT_THROW(OriginPolicy({"http://*.a.*"}), std::invalid_argument);
  EXPECT_NO_THROW(OriginPolicy({"moz-extension://abc", " http://spaced.example "}));
}

TEST(OriginPolicy, SameOriginIsNotCors) {
  EXPECT_FALSE(is_cross_origin("", "localhost:11434"));
  EXPECT_FALSE(is_cross_origin("http://localhost:11434", "localhost:11434"));
  EXPECT_FALSE(is_cross_origin("https://myhost:11434", "MYHOST:11434"));
  EXPECT_TRUE(is_cross_origin("http://localhost:3000", "localhost:11434"));
}

TEST(HostPolicy, AcceptsLocalNamesAndAddressesOnly) {
  const HostPolicy p("MyBox", {"192.0.2.7", "2001:db8::5"});
  for (const char* ok : {"",
                         "localhost",
                         "localhost:11434",
                         "LOCALHOST",
                         "mybox",
                         "mybox:80",
                         "app.localhost",
                         "printer.local:631",
                         "svc.internal",
                         "127.0.0.1",
                         "127.0.0.1:11434",
                         "127.9.9.9",
                         "[::1]:11434",
                         "::1",
                         "10.1.2.3",
                         "172.16.0.1",
                         "192.168.1.1:80",
                         "0.0.0.0",
                         "[fd00::1]",
                         "192.0.2.7:11434",
                         "[2001:db8::5]:1"}) {
    EXPECT_TRUE(p.allows(ok)) << ok;
  }
  for (const char* bad : {"evil.com", "evil.com:11434", "localhost.evil.com", "mybox.evil",
                          "8.8.8.8", "172.32.0.1", "[2001:db8::6]:1", "local", "internal"}) {
    EXPECT_FALSE(p.allows(bad)) << bad;
  }
}

}  // namespace
