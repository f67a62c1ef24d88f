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
  // Request line + headers. Kept under Beast's 64 KiB per-field ceiling so that no header or
  // trailer can reach it (Beast throws there instead of reporting an error).
  size_t header_bytes = 60 * 1024;
  // read_body(): a JSON request (chat with base64 images is the largest); streamed bodies
  // (read_body_some) are unlimited.
  uint64_t body_bytes = uint64_t{64} << 20;
  // All read_body() bodies held at once, over every connection; past it a request gets 503.
  uint64_t body_bytes_in_flight = uint64_t{256} << 20;
  std::chrono::seconds idle_timeout{30};    // keep-alive wait for the next request's first byte
  std::chrono::seconds header_timeout{10};  // first byte to the end of the headers
  std::chrono::seconds body_timeout{60};    // the whole of a read_body() body
  std::chrono::seconds read_timeout{30};    // no progress while streaming a request body
  std::chrono::seconds write_timeout{300};  // no progress while writing a response
  std::chrono::seconds shutdown_grace{10};  // how long running requests may finish on stop
  // After the grace: how long requests whose work was ended may take to tell their clients.
  std::chrono::seconds shutdown_finish{3};
  // Open connections; at the cap the server stops accepting until one closes (the kernel
  // queues the rest), so idle or slow clients cannot exhaust file descriptors.
  size_t max_connections = 2048;  // VKLLM_MAX_CONNECTIONS
};

// What the application does while the server stops (SIGINT/SIGTERM or stop()).
struct ShutdownHooks {
  // At once, before the listeners close (e.g. readiness turns false). On an I/O thread.
  std::function<void()> draining;
  // When the grace ends with requests still running: end their work so that each finishes with
  // an error its client can read (a final error line mid-stream, else a 503). On an I/O thread;
  // it may block briefly (joining engine threads).
  std::function<void()> grace_expired;
};

struct ServerConfig {
  HostAddress address;  // host "" = every interface; port 0 = any free port
  OriginPolicy origins;
  ApiKeyPolicy api_keys;  // VKLLM_API_KEY; disabled by default
  ServerLimits limits;
  unsigned threads = 4;
  bool log_requests = true;  // one line per request on stderr
  ShutdownHooks on_shutdown = {};
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
  // Thread-safe; begins the graceful stop: stop accepting, let running requests finish within
  // the grace, then have the application end the rest (ShutdownHooks::grace_expired) and give
  // them shutdown_finish to say so, then return from run().
  void stop();
  // True once the stop has begun.
  bool stopping() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::http
