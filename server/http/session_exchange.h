// The Exchange of one request over a connection's socket, as the server's session drives it:
// the body read with limits (size, time, a budget shared by every connection), the response
// written plain, chunked or sized, and a watch on the socket that tells handlers when the
// client has gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/http/exchange.h"
#include "server/http/server.h"

namespace vkllm::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;

// Shared by every connection: request bodies read whole into memory right now.
struct BodyBudget {
  std::atomic<uint64_t> in_flight{0};
  uint64_t limit = 0;
};

class SessionExchange final : public Exchange {
 public:
  SessionExchange(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                  bhttp::request_parser<bhttp::buffer_body>& parser, const ServerLimits& limits,
                  BodyBudget& budget);

  Method method() const override { return method_; }
  std::string_view target() const override { return target_; }
  std::optional<std::string> header(std::string_view name) const override;
  std::optional<uint64_t> content_length() const override;

  boost::asio::awaitable<std::string> read_body() override;

  boost::asio::awaitable<size_t> read_body_some(std::span<char> out) override;

  void add_header(std::string_view name, std::string_view value) override {
    extra_headers_.emplace_back(std::string(name), std::string(value));
  }

  boost::asio::awaitable<void> respond(unsigned status, std::string_view content_type,
                                       std::string body) override;

  boost::asio::awaitable<void> start_chunked(unsigned status,
                                             std::string_view content_type) override;

  boost::asio::awaitable<void> start_sized(unsigned status, std::string_view content_type,
                                           uint64_t length) override;

  boost::asio::awaitable<void> write_chunk(std::string_view data) override;

  boost::asio::awaitable<void> finish_chunked() override;

  bool response_started() const override { return started_; }
  boost::asio::any_io_executor executor() const override { return stream_.get_executor(); }

  void on_disconnect(std::function<void()> callback) override;

  // The handler finished: no callback runs after this, and the socket is free for the next read.
  void end_watch();
  ~SessionExchange() override {
    end_watch();
    budget_.in_flight -= reserved_;
  }

  bool finished() const { return finished_; }
  bool sized() const { return sized_; }
  bool io_failed() const { return io_failed_; }
  unsigned status() const { return status_; }
  bool keep_alive() const { return keep_alive_ && parser_.get().keep_alive(); }
  void set_keep_alive(bool k) { keep_alive_ = keep_alive_ && k; }

  // Reads and discards a small unread body so the connection can serve the next request.
  boost::asio::awaitable<void> drain_body();

 private:
  template <class Body>
  void apply_headers(bhttp::response<Body>& res, std::string_view content_type) {
    if (!content_type.empty()) {
      res.set(bhttp::field::content_type,
              beast::string_view(content_type.data(), content_type.size()));
    }
    for (const auto& [k, v] : extra_headers_) res.insert(k, v);
    res.keep_alive(keep_alive());
  }

  void reserve_body_bytes(uint64_t n);

  boost::asio::awaitable<void> send_continue_if_expected();
  // Sends a streamed response's head (start_chunked, start_sized); a failed write marks the
  // connection unusable.
  boost::asio::awaitable<void> write_head(bhttp::response<bhttp::empty_body>& res);

  // The disconnect watch outlives the exchange in its pending completion; `active` tells it the
  // exchange is gone. Everything here is touched only on the connection's strand.
  struct DisconnectWatch {
    std::vector<std::function<void()>> callbacks;
    bool active = true;
    bool waiting = false;
    bool fired = false;
  };

  // Waits for the socket to become readable while the handler runs. Bytes that arrive are the
  // next pipelined request: they go into the session's buffer for the next parse. EOF or an error
  // means the client has gone: the callbacks run.
  void arm_watch();

  static void fire(DisconnectWatch& w);

  static void run_callback(const std::function<void()>& cb);

  beast::tcp_stream& stream_;
  beast::flat_buffer& buffer_;
  bhttp::request_parser<bhttp::buffer_body>& parser_;
  const ServerLimits& limits_;
  BodyBudget& budget_;
  uint64_t reserved_ = 0;  // of budget_, released with the exchange
  std::optional<std::chrono::steady_clock::time_point> body_deadline_;
  std::shared_ptr<DisconnectWatch> watch_;
  Method method_;
  std::string target_;
  unsigned version_ = 11;
  std::vector<std::pair<std::string, std::string>> extra_headers_;
  bool started_ = false, finished_ = false, chunked_ = true, io_failed_ = false;
  bool keep_alive_ = true, continue_sent_ = false;
  unsigned status_ = 0;
  bool sized_ = false;
  uint64_t sized_remaining_ = 0;
};

}  // namespace vkllm::http
