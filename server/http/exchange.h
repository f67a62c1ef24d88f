// One HTTP request/response as a handler sees it. The session implements it over a socket; unit
// tests can implement it in memory. A handler either calls respond() once, or
// start_chunked() + write_chunk()... + finish_chunked() (the wire formats of streams.h).
// Socket errors (the client went away) surface as exceptions from the awaitables. A handler
// fails by throwing (a StatusError for a status of its choosing); the server answers the failure
// in the client's API error shape (error_reply.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "server/http/method.h"
#include "server/http/router.h"
#include "server/http/status_error.h"

namespace vkllm::http {

class Exchange {
 public:
  virtual ~Exchange() = default;

  virtual Method method() const = 0;
  virtual std::string_view target() const = 0;  // as received: path plus optional "?query"
  std::string_view path() const;
  std::string_view query() const;
  // A query parameter, percent-decoded ('+' as space); nullopt when absent.
  std::optional<std::string> query_param(std::string_view name) const;
  virtual std::optional<std::string> header(std::string_view name) const = 0;

  const PathParams& params() const { return params_; }
  std::string param(std::string_view name) const;
  void set_params(PathParams p) { params_ = std::move(p); }

  virtual std::optional<uint64_t> content_length() const = 0;
  // The whole body, at most the server's body limit (StatusError 413 beyond it).
  virtual boost::asio::awaitable<std::string> read_body() = 0;
  // Next piece of the body into `buf` (no size limit); 0 once the body is complete.
  virtual boost::asio::awaitable<size_t> read_body_some(std::span<char> buf) = 0;

  // Extra response header for whatever response follows (e.g. CORS, Location).
  virtual void add_header(std::string_view name, std::string_view value) = 0;
  virtual boost::asio::awaitable<void> respond(unsigned status, std::string_view content_type,
                                               std::string body) = 0;
  virtual boost::asio::awaitable<void> start_chunked(unsigned status,
                                                     std::string_view content_type) = 0;
  // A body of known length written piecewise (large files): write_chunk() sends raw bytes
  // and finish_chunked() ends it; exactly `length` bytes must be written.
  virtual boost::asio::awaitable<void> start_sized(unsigned status, std::string_view content_type,
                                                   uint64_t length) = 0;
  virtual boost::asio::awaitable<void> write_chunk(std::string_view data) = 0;
  virtual boost::asio::awaitable<void> finish_chunked() = 0;
  virtual bool response_started() const = 0;
  // The connection's executor (a strand); long work should be posted elsewhere.
  virtual boost::asio::any_io_executor executor() const = 0;
  // Runs `callback` (once, on the connection's executor) when the client is known to have gone
  // while the handler still runs: the socket closed or reset after the request was read. A
  // handler streaming tokens uses it to cancel generation at once, not at its next write. The
  // default implementation never calls it (in-memory exchanges).
  virtual void on_disconnect(std::function<void()> callback) { (void)callback; }

 private:
  PathParams params_;
};

inline constexpr std::string_view kJsonContentType = "application/json; charset=utf-8";
inline constexpr std::string_view kTextContentType = "text/plain; charset=utf-8";

}  // namespace vkllm::http
