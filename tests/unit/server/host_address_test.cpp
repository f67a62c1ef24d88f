#include "server/http/host_address.h"

#include <gtest/gtest.h>

using vkllm::http::parse_ollama_host;

namespace {

struct Case {
  const char* input;
  const char* scheme;
  const char* host;
  int port;
  const char* path;
};

TEST(OllamaHost, ParsesLikeOllama) {
  const Case cases[] = {
      {"", "http", "127.0.0.1", 11434, ""},
      {"   ", "http", "127.0.0.1", 11434, ""},
      {"1.2.3.4", "http", "1.2.3.4", 11434, ""},
      {":1234", "http", "", 1234, ""},
      {"1.2.3.4:1234", "http", "1.2.3.4", 1234, ""},
      {"example.com", "http", "example.com", 11434, ""},
      {"example.com:1234", "http", "example.com", 1234, ""},
      {"0.0.0.0", "http", "0.0.0.0", 11434, ""},
      {"0.0.0.0:1234", "http", "0.0.0.0", 1234, ""},
      {"http://1.2.3.4", "http", "1.2.3.4", 80, ""},
      {"http://1.2.3.4:4321", "http", "1.2.3.4", 4321, ""},
      {"https://1.2.3.4", "https", "1.2.3.4", 443, ""},
      {"https://1.2.3.4:4321", "https", "1.2.3.4", 4321, ""},
      {"[::1]", "http", "::1", 11434, ""},
      {"[::1]:1234", "http", "::1", 1234, ""},
      {"::1", "http", "::1", 11434, ""},
      {"http://[::1]:8080/api/path", "http", "::1", 8080, "api/path"},
      {"example.com/path", "http", "example.com", 11434, "path"},
      {"ollama.com", "https", "ollama.com", 443, ""},
      {"\"127.0.0.1:5000\"", "http", "127.0.0.1", 5000, ""},
      {"'localhost:7'", "http", "localhost", 7, ""},
      {"localhost:99999", "http", "localhost", 11434, ""},
      {"localhost:abc", "http", "localhost", 11434, ""},
      {"localhost:", "http", "localhost", 11434, ""},
      {"https://host:-1", "https", "host", 443, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string("OLLAMA_HOST=") + c.input);
    const auto h = parse_ollama_host(c.input);
    EXPECT_EQ(h.scheme, c.scheme);
    EXPECT_EQ(h.host, c.host);
    EXPECT_EQ(h.port, c.port);
    EXPECT_EQ(h.path, c.path);
  }
}

TEST(OllamaHost, ClientUrlReplacesUnspecifiedHostWithLoopback) {
  EXPECT_EQ(parse_ollama_host("0.0.0.0:8080").base_url(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_ollama_host(":8080").base_url(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_ollama_host("[::]:8080").base_url(), "http://127.0.0.1:8080");
  EXPECT_EQ(parse_ollama_host("[::1]:8080").base_url(), "http://[::1]:8080");
  EXPECT_EQ(parse_ollama_host("https://example.com/x").base_url(), "https://example.com:443/x");
  EXPECT_EQ(parse_ollama_host("").host_port(), "127.0.0.1:11434");
}

}  // namespace
