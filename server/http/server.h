// The HTTP/1.1 server: listeners on the OLLAMA_HOST address, one coroutine session per
// connection (keep-alive), CORS and Host checks, request limits, routing to handlers, and a
// graceful stop on SIGINT/SIGTERM (stop accepting, let running requests finish, then exit).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "server/http/access_policy.h"
#include "server/http/api_key_policy.h"
#include "server/http/host_address.h"
#include "server/http/router.h"

namespace vkllm::http {

struct ServerLimits {
  size_t header_bytes = 1 << 20;              // request line + headers (Go's default)
  uint64_t body_bytes = uint64_t{256} << 20;  // read_body(); streamed bodies are unlimited
  std::chrono::seconds idle_timeout{300};     // keep-alive wait for the next request
  std::chrono::seconds read_timeout{60};      // no progress while reading a request
  std::chrono::seconds write_timeout{300};    // no progress while writing a response
  std::chrono::seconds shutdown_grace{10};    // how long running requests may finish on stop
};

struct ServerConfig {
  HostAddress address;  // host "" = every interface; port 0 = any free port
  OriginPolicy origins;
  ApiKeyPolicy api_keys;  // VKLLM_API_KEY; disabled by default
  ServerLimits limits;
  unsigned threads = 4;
  bool log_requests = true;  // one line per request on stderr
};

class Server {
 public:
  Server(ServerConfig config, Router router);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listener; throws std::runtime_error naming the address on failure.
  void listen();
  uint16_t port() const;              // the bound port (after listen)
  std::string bound_address() const;  // "127.0.0.1:11434"
  // Serves until stop() or, when `handle_signals`, SIGINT/SIGTERM. Blocks.
  void run(bool handle_signals = true);
  // Thread-safe; begins the graceful stop.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::http
