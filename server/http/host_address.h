// OLLAMA_HOST, parsed the way Ollama parses it, for the server's bind address and for clients.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vkllm::http {

struct HostAddress {
  std::string scheme = "http";     // "http" or "https" (clients only; the server speaks plain HTTP)
  std::string host = "127.0.0.1";  // "" means every interface; IPv6 without brackets
  uint16_t port = 11434;
  std::string path;  // after the first '/', without it

  // "host:port" with IPv6 hosts in brackets, e.g. "[::1]:11434".
  std::string host_port() const;
  // Where a client connects: an unspecified host ("", 0.0.0.0, ::) becomes loopback.
  std::string client_host() const;
  // "http://127.0.0.1:11434" (plus "/path" when one was given), for clients.
  std::string base_url() const;
};

// Ollama's rules (envconfig.Host): no scheme → http and port 11434; http:// → port 80;
// https:// → 443; bare "ollama.com" → https://ollama.com:443; ":port" → all interfaces;
// "[v6]:port"; a missing or invalid port → the scheme's default; empty → 127.0.0.1:11434.
HostAddress parse_ollama_host(std::string_view value);

}  // namespace vkllm::http
