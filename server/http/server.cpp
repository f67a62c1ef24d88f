#include "server/http/server.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/http/exchange.h"
#include "server/http/json_text.h"

namespace vkllm::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr size_t kBodyChunk = 64 * 1024;
constexpr uint64_t kDrainLimit = 256 * 1024;  // unread body bytes we still skip to keep alive
// Pipelined bytes the disconnect watch keeps for the next parse; past it the watch stops (a
// client that sends that much ahead is not leaving).
constexpr size_t kWatchKeepLimit = 64 * 1024;
// The connection's read buffer: headers and pipelined bytes. Smaller than Beast's 64 KiB
// per-field ceiling plus framing, so a chunked trailer too can never reach it (the parser
// reports buffer_overflow instead of throwing).
constexpr size_t kReadBufferLimit = 64 * 1024;
constexpr size_t kHeaderLimitMax = 60 * 1024;

// Shared by every connection: request bodies read whole into memory right now.
struct BodyBudget {
  std::atomic<uint64_t> in_flight{0};
  uint64_t limit = 0;
};

std::string now_for_log() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y/%m/%d - %H:%M:%S", &tm);
  return buf;
}

std::mutex log_mutex;
void log_line(const std::string& line) {
  std::lock_guard lock(log_mutex);
  std::cerr << line << std::endl;
}

// The socket-backed Exchange of one request in a session.
class SessionExchange final : public Exchange {
 public:
  SessionExchange(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                  bhttp::request_parser<bhttp::buffer_body>& parser, const ServerLimits& limits,
                  BodyBudget& budget)
      : stream_(stream), buffer_(buffer), parser_(parser), limits_(limits), budget_(budget) {
    const auto& req = parser_.get();
    method_ =
        parse_method(std::string_view(req.method_string().data(), req.method_string().size()));
    target_ = std::string(req.target());
    version_ = req.version();
  }

  Method method() const override { return method_; }
  std::string_view target() const override { return target_; }
  std::optional<std::string> header(std::string_view name) const override {
    const auto& req = parser_.get();
    const auto it = req.find(beast::string_view(name.data(), name.size()));
    if (it == req.end()) return std::nullopt;
    return std::string(it->value());
  }
  std::optional<uint64_t> content_length() const override {
    const auto n = parser_.content_length();
    if (n) return *n;
    return std::nullopt;
  }

  awaitable<std::string> read_body() override {
    std::string body;
    const auto announced = content_length();
    if (announced && *announced > limits_.body_bytes) {
      keep_alive_ = false;
      throw HttpError(413, "request body too large: " + std::to_string(*announced) +
                               " bytes, limit " + std::to_string(limits_.body_bytes));
    }
    // A known length is reserved (and allocated) at once; a chunked body as it grows.
    if (announced) {
      reserve_body_bytes(*announced);
      body.reserve(*announced);
    }
    body_deadline_ = std::chrono::steady_clock::now() + limits_.body_timeout;
    std::vector<char> buf(kBodyChunk);
    for (;;) {
      const size_t n = co_await read_body_some(buf);
      if (n == 0) break;
      if (body.size() + n > limits_.body_bytes) {
        keep_alive_ = false;
        throw HttpError(
            413, "request body too large: limit " + std::to_string(limits_.body_bytes) + " bytes");
      }
      if (body.size() + n > reserved_) reserve_body_bytes(body.size() + n - reserved_);
      body.append(buf.data(), n);
    }
    body_deadline_.reset();
    co_return body;
  }

  awaitable<size_t> read_body_some(std::span<char> out) override {
    if (parser_.is_done() || out.empty()) co_return 0;
    co_await send_continue_if_expected();
    auto& body = parser_.get().body();
    for (;;) {
      body.data = out.data();
      body.size = out.size();
      beast::error_code ec;
      auto expiry = std::chrono::steady_clock::now() + limits_.read_timeout;
      if (body_deadline_) expiry = std::min(expiry, *body_deadline_);
      stream_.expires_at(expiry);
      co_await bhttp::async_read_some(stream_, buffer_, parser_,
                                      asio::redirect_error(use_awaitable, ec));
      const size_t got = out.size() - body.size;
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) {
        keep_alive_ = false;
        // A timeout closed the socket; a malformed body (bad chunk, trailer too large) gets
        // its 400 and the connection closes after it.
        io_failed_ = ec == beast::error::timeout || !stream_.socket().is_open();
        if (ec == beast::error::timeout) throw HttpError(408, "timed out reading request body");
        throw HttpError(400, "reading request body: " + ec.message());
      }
      if (parser_.is_done()) arm_watch();
      if (got > 0 || parser_.is_done()) co_return got;
    }
  }

  void add_header(std::string_view name, std::string_view value) override {
    extra_headers_.emplace_back(std::string(name), std::string(value));
  }

  awaitable<void> respond(unsigned status, std::string_view content_type,
                          std::string body) override {
    if (started_) throw std::logic_error("response already started");
    started_ = true;
    status_ = status;
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), version_};
    apply_headers(res, content_type);
    res.body() = std::move(body);
    res.prepare_payload();
    stream_.expires_after(limits_.write_timeout);
    try {
      if (method_ == Method::head) {
        bhttp::response_serializer<bhttp::string_body> sr{res};
        co_await bhttp::async_write_header(stream_, sr, use_awaitable);
      } else {
        co_await bhttp::async_write(stream_, res, use_awaitable);
      }
    } catch (...) {
      io_failed_ = true;
      throw;
    }
    finished_ = true;
  }

  awaitable<void> start_chunked(unsigned status, std::string_view content_type) override {
    if (started_) throw std::logic_error("response already started");
    started_ = true;
    status_ = status;
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the body ends when the connection does
    bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version_};
    apply_headers(res, content_type);
    if (chunked_) res.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    stream_.expires_after(limits_.write_timeout);
    try {
      co_await bhttp::async_write_header(stream_, sr, use_awaitable);
    } catch (...) {
      io_failed_ = true;
      throw;
    }
  }

  awaitable<void> start_sized(unsigned status, std::string_view content_type,
                              uint64_t length) override {
    if (started_) throw std::logic_error("response already started");
    started_ = true;
    status_ = status;
    chunked_ = false;
    sized_ = true;
    sized_remaining_ = length;
    bhttp::response<bhttp::empty_body> res{static_cast<bhttp::status>(status), version_};
    apply_headers(res, content_type);
    res.content_length(length);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    stream_.expires_after(limits_.write_timeout);
    try {
      co_await bhttp::async_write_header(stream_, sr, use_awaitable);
    } catch (...) {
      io_failed_ = true;
      throw;
    }
  }

  awaitable<void> write_chunk(std::string_view data) override {
    if (!started_ || finished_) throw std::logic_error("no open chunked response");
    if (data.empty() || method_ == Method::head) co_return;
    if (sized_) {
      if (data.size() > sized_remaining_) throw std::logic_error("body longer than announced");
      sized_remaining_ -= data.size();
    }
    stream_.expires_after(limits_.write_timeout);
    try {
      if (chunked_) {
        co_await asio::async_write(stream_, bhttp::make_chunk(asio::buffer(data)), use_awaitable);
      } else {
        co_await asio::async_write(stream_, asio::buffer(data), use_awaitable);
      }
    } catch (...) {
      io_failed_ = true;
      throw;
    }
  }

  awaitable<void> finish_chunked() override {
    if (!started_ || finished_) co_return;
    finished_ = true;
    if (sized_ && sized_remaining_ != 0 && method_ != Method::head) keep_alive_ = false;
    if (!chunked_ || method_ == Method::head) co_return;
    stream_.expires_after(limits_.write_timeout);
    try {
      co_await asio::async_write(stream_, bhttp::make_chunk_last(), use_awaitable);
    } catch (...) {
      io_failed_ = true;
      throw;
    }
  }

  bool response_started() const override { return started_; }
  asio::any_io_executor executor() const override { return stream_.get_executor(); }

  void on_disconnect(std::function<void()> callback) override {
    if (!watch_) watch_ = std::make_shared<DisconnectWatch>();
    if (watch_->fired) {  // already known gone: tell this one too, but not from inside its caller
      asio::post(stream_.get_executor(), [cb = std::move(callback)] { run_callback(cb); });
      return;
    }
    watch_->callbacks.push_back(std::move(callback));
    arm_watch();
  }

  // The handler finished: no callback runs after this, and the socket is free for the next read.
  void end_watch() {
    if (!watch_) return;
    watch_->active = false;
    if (watch_->waiting) {
      beast::error_code ec;
      stream_.socket().cancel(ec);
    }
    watch_.reset();
  }
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
  awaitable<void> drain_body() {
    if (parser_.is_done()) co_return;
    const auto n = content_length();
    if (!continue_sent_ && parser_.get()[bhttp::field::expect] == "100-continue") {
      keep_alive_ = false;  // the client never sent the body; the stream is out of step
      co_return;
    }
    if (!n || *n > kDrainLimit) {
      keep_alive_ = false;
      co_return;
    }
    std::vector<char> buf(kBodyChunk);
    try {
      while (co_await read_body_some(buf) > 0) {
      }
    } catch (...) {
      keep_alive_ = false;
    }
  }

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

  void reserve_body_bytes(uint64_t n) {
    if (budget_.in_flight.fetch_add(n) + n > budget_.limit) {
      budget_.in_flight -= n;
      keep_alive_ = false;
      throw HttpError(503, "server busy: too many large request bodies in flight, retry later");
    }
    reserved_ += n;
  }

  awaitable<void> send_continue_if_expected() {
    if (continue_sent_) co_return;
    continue_sent_ = true;
    if (parser_.get()[bhttp::field::expect] != "100-continue" || version_ < 11) co_return;
    bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, version_};
    stream_.expires_after(limits_.write_timeout);
    co_await bhttp::async_write(stream_, cont, use_awaitable);
  }

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
  void arm_watch() {
    auto w = watch_;
    if (!w || !w->active || w->waiting || w->fired || !parser_.is_done()) return;
    if (buffer_.size() >= kWatchKeepLimit) return;
    w->waiting = true;
    stream_.socket().async_wait(tcp::socket::wait_read, [this, w](beast::error_code ec) {
      w->waiting = false;
      if (!w->active) return;  // the exchange ended; `this` may be gone
      if (ec) {
        // Cancelled while open: nobody but end_watch() cancels, so only a closed socket (a
        // timeout closed it) or a socket error means the client is unreachable.
        if (ec != asio::error::operation_aborted || !stream_.socket().is_open()) fire(*w);
        return;
      }
      const size_t room = std::min(buffer_.max_size() - buffer_.size(),
                                   kWatchKeepLimit - std::min(kWatchKeepLimit, buffer_.size()));
      if (room == 0) return;  // a client that sends this much ahead is not leaving
      auto space = buffer_.prepare(std::min<size_t>(16 * 1024, room));
      const ssize_t n =
          ::recv(stream_.socket().native_handle(), space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) {
        buffer_.commit(static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        fire(*w);
        return;
      }
      arm_watch();
    });
  }

  static void fire(DisconnectWatch& w) {
    w.fired = true;
    auto callbacks = std::move(w.callbacks);
    w.callbacks.clear();
    for (auto& cb : callbacks) run_callback(cb);
  }

  static void run_callback(const std::function<void()>& cb) {
    try {
      cb();
    } catch (...) {  // a callback's failure must not escape into the io_context
    }
  }

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

}  // namespace

struct Server::Impl {
  ServerConfig config;
  Router router;
  HostPolicy host_policy;
  asio::io_context ioc;
  std::vector<tcp::acceptor> acceptors;
  bool check_host = false;
  std::atomic<bool> stopping{false};
  std::atomic<int> active_requests{0};
  std::atomic<size_t> connections{0};
  BodyBudget body_budget;
  uint16_t port = 0;
  std::string bound;

  Impl(ServerConfig c, Router r)
      : config(std::move(c)), router(std::move(r)), ioc(static_cast<int>(config.threads)) {
    body_budget.limit = config.limits.body_bytes_in_flight;
  }

  awaitable<void> accept_loop(tcp::acceptor& acceptor) {
    asio::steady_timer pause(acceptor.get_executor());
    beast::error_code ignored;
    for (;;) {
      // At the cap, leave new clients in the kernel's queue until a connection closes.
      while (connections >= config.limits.max_connections && !stopping) {
        pause.expires_after(std::chrono::milliseconds(5));
        co_await pause.async_wait(asio::redirect_error(use_awaitable, ignored));
      }
      beast::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::make_strand(ioc),
                                                          asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (stopping || ec == asio::error::operation_aborted) co_return;
        // e.g. EMFILE: keep serving the connections we have, and let some close
        pause.expires_after(std::chrono::milliseconds(50));
        co_await pause.async_wait(asio::redirect_error(use_awaitable, ignored));
        continue;
      }
      ++connections;
      auto ex = socket.get_executor();
      asio::co_spawn(ex, guarded_session(std::move(socket)), asio::detached);
    }
  }

  // Nothing that goes wrong on one connection may end the others: whatever escapes the session
  // closes just this socket.
  awaitable<void> guarded_session(tcp::socket socket) {
    try {
      co_await session(std::move(socket));
    } catch (const std::exception& e) {
      if (config.log_requests) log_line(std::string("[vkllm] connection dropped: ") + e.what());
    }
    --connections;
  }

  // Answers before routing: CORS and Host checks. Returns true when it already responded.
  awaitable<bool> gatekeep(SessionExchange& ex) {
    const std::string origin = ex.header("Origin").value_or("");
    const std::string host = ex.header("Host").value_or("");
    if (is_cross_origin(origin, host)) {
      if (!config.origins.allows(origin)) {
        co_await ex.respond(403, "", "");
        co_return true;
      }
      ex.add_header("Access-Control-Allow-Origin", config.origins.allows_all() ? "*" : origin);
      ex.add_header("Vary", "Origin");
      if (ex.method() == Method::options) {
        ex.add_header("Access-Control-Allow-Methods", kCorsAllowMethods);
        ex.add_header("Access-Control-Allow-Headers", kCorsAllowHeaders);
        ex.add_header("Access-Control-Max-Age", kCorsMaxAge);
        ex.add_header("Vary", "Access-Control-Request-Method");
        ex.add_header("Vary", "Access-Control-Request-Headers");
        co_await ex.respond(204, "", "");
        co_return true;
      }
    }
    if (check_host && !host_policy.allows(host)) {
      co_await ex.respond(403, "", "");
      co_return true;
    }
    if (config.api_keys.enabled() &&
        !config.api_keys.allows(method_name(ex.method()), ex.path(), ex.header("Authorization"),
                                ex.header("x-api-key"))) {
      ex.add_header("WWW-Authenticate", "Bearer");
      co_await ex.respond(401, kJsonContentType, ApiKeyPolicy::unauthorized_body(ex.path()));
      co_return true;
    }
    co_return false;
  }

  awaitable<void> handle(SessionExchange& ex) {
    if (co_await gatekeep(ex)) co_return;
    auto match = router.match(ex.method(), ex.path());
    if (match.kind != RouteMatch::Kind::found) {
      if (ex.method() == Method::options) {
        co_await ex.respond(204, "", "");
      } else if (match.kind == RouteMatch::Kind::method_not_allowed) {
        co_await ex.respond(405, kTextContentType, "405 method not allowed");
      } else {
        co_await ex.respond(404, kTextContentType, "404 page not found");
      }
      co_return;
    }
    ex.set_params(std::move(match.params));
    std::string error;
    unsigned status = 500;
    try {
      co_await (*match.handler)(ex);
    } catch (const HttpError& e) {
      error = e.what();
      status = e.status();
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (ex.io_failed()) co_return;
    if (!error.empty() || !ex.response_started()) {
      if (error.empty()) error = "handler sent no response";
      if (!ex.response_started()) {
        co_await respond_error(ex, status, error);
      } else if (ex.sized()) {
        ex.set_keep_alive(false);  // a fixed-length body cut short: only closing tells the client
      } else if (!ex.finished()) {
        // Mid-stream: the status is gone; Ollama clients read a final {"error": ...} line.
        co_await ex.write_chunk(json_error_line(error));
      }
    }
    if (!ex.finished()) co_await ex.finish_chunked();
  }

  static std::string json_error_line(const std::string& message);

  // Why a request's framing cannot be trusted (RFC 9112 §6.1, §3.2), or "" when it can. Beast
  // takes a Transfer-Encoding whose last coding is not chunked for "no body", which would let
  // the body be read as a next request; we know no coding but chunked, so anything else is
  // refused and the connection closed.
  static std::string framing_problem(const bhttp::request_parser<bhttp::buffer_body>& parser) {
    const auto& req = parser.get();
    const auto te = req.equal_range(bhttp::field::transfer_encoding);
    if (te.first != te.second) {
      if (std::next(te.first) != te.second ||
          !beast::iequals(trim_ows(te.first->value()), "chunked")) {
        return "unsupported Transfer-Encoding";
      }
    }
    const size_t hosts = req.count(bhttp::field::host);
    if (hosts > 1) return "more than one Host header";
    if (hosts == 0 && req.version() >= 11) return "missing Host header";
    return {};
  }

  static beast::string_view trim_ows(beast::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  }

  // A read error that only means the peer left or went quiet, which needs no answer.
  static bool quiet_end(const beast::error_code& ec) {
    return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
           ec == beast::error::timeout || ec == asio::error::connection_reset ||
           ec == asio::error::operation_aborted || ec == asio::error::broken_pipe;
  }

  awaitable<void> session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer(kReadBufferLimit);
    std::string remote;
    {
      beast::error_code ec;
      const auto ep = stream.socket().remote_endpoint(ec);
      if (!ec) remote = ep.address().to_string();
    }
    for (;;) {
      beast::error_code ec;
      if (buffer.size() == 0) {
        // Idle keep-alive: wait for the first byte of the next request...
        stream.expires_after(config.limits.idle_timeout);
        const size_t n = co_await stream.async_read_some(buffer.prepare(4096),
                                                         asio::redirect_error(use_awaitable, ec));
        if (ec) break;
        buffer.commit(n);
      }
      // ...then the whole header must arrive in header_timeout, however it trickles in.
      bhttp::request_parser<bhttp::buffer_body> parser;
      parser.header_limit(
          static_cast<uint32_t>(std::min(config.limits.header_bytes, kHeaderLimitMax)));
      parser.body_limit(boost::none);
      stream.expires_after(config.limits.header_timeout);
      co_await bhttp::async_read_header(stream, buffer, parser,
                                        asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
          co_await write_plain_and_close(stream, 431, "431 Request Header Fields Too Large");
        } else if (ec == beast::error::timeout) {
          // the socket is closed already: nothing to answer on
        } else if (!quiet_end(ec)) {
          co_await write_plain_and_close(stream, 400, "400 Bad Request");
        }
        break;
      }
      if (const auto problem = framing_problem(parser); !problem.empty()) {
        co_await write_plain_and_close(stream, 400, "400 Bad Request: " + problem);
        break;
      }
      ++active_requests;
      const auto started = std::chrono::steady_clock::now();
      SessionExchange ex(stream, buffer, parser, config.limits, body_budget);
      try {
        co_await handle(ex);
        ex.end_watch();
        if (!ex.io_failed()) co_await ex.drain_body();
      } catch (...) {
        ex.set_keep_alive(false);
      }
      --active_requests;
      if (config.log_requests) {
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count();
        char took[32];
        std::snprintf(took, sizeof took, "%.3fms", ms);
        log_line("[vkllm] " + now_for_log() + " | " + std::to_string(ex.status()) + " | " + took +
                 " | " + remote + " | " + std::string(method_name(ex.method())) + " \"" +
                 std::string(ex.path()) + "\"" + (ex.io_failed() ? " (client gone)" : ""));
      }
      if (ex.io_failed() || !ex.keep_alive() || stopping) break;
    }
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  static awaitable<void> write_plain_and_close(beast::tcp_stream& stream, unsigned status,
                                               std::string body) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
    res.set(bhttp::field::connection, "close");
    res.body() = std::move(body);
    res.prepare_payload();
    beast::error_code ec;
    stream.expires_after(std::chrono::seconds(5));
    co_await bhttp::async_write(stream, res, asio::redirect_error(use_awaitable, ec));
  }

  void bind() {
    const auto& addr = config.address;
    std::vector<tcp::endpoint> endpoints;
    beast::error_code ec;
    if (addr.host.empty()) {
      endpoints.emplace_back(asio::ip::address_v6::any(), addr.port);
    } else {
      const auto ip = asio::ip::make_address(addr.host, ec);
      if (!ec) {
        endpoints.emplace_back(ip, addr.port);
      } else {
        tcp::resolver resolver(ioc);
        const auto results = resolver.resolve(addr.host, std::to_string(addr.port), ec);
        if (ec || results.empty()) {
          throw std::runtime_error("cannot resolve listen address " + addr.host_port() + ": " +
                                   ec.message());
        }
        endpoints.push_back(results.begin()->endpoint());
      }
    }
    for (const auto& ep : endpoints) {
      tcp::acceptor acceptor(ioc);
      auto try_open = [&](const tcp::endpoint& e) {
        beast::error_code err;
        acceptor.open(e.protocol(), err);
        if (!err) acceptor.set_option(asio::socket_base::reuse_address(true), err);
        if (!err && e.protocol() == tcp::v6() && addr.host.empty()) {
          acceptor.set_option(asio::ip::v6_only(false), err);
        }
        if (!err) acceptor.bind(e, err);
        if (!err) acceptor.listen(asio::socket_base::max_listen_connections, err);
        return err;
      };
      ec = try_open(ep);
      if (ec && addr.host.empty()) {  // no IPv6 on this machine: every IPv4 interface instead
        beast::error_code ignore;
        acceptor.close(ignore);
        ec = try_open(tcp::endpoint(asio::ip::address_v4::any(), addr.port));
      }
      if (ec) {
        throw std::runtime_error("listen tcp " + addr.host_port() + ": " + ec.message());
      }
      const auto local = acceptor.local_endpoint();
      port = local.port();
      check_host = local.address().is_loopback();
      HostAddress shown = addr;
      shown.port = port;
      bound = shown.host_port();
      acceptors.push_back(std::move(acceptor));
    }
  }

  void begin_stop() {
    if (stopping.exchange(true)) return;
    asio::post(ioc, [this] {
      for (auto& a : acceptors) {
        beast::error_code ec;
        a.close(ec);
      }
      asio::co_spawn(ioc, wait_for_requests(), asio::detached);
    });
  }

  awaitable<void> wait_for_requests() {
    asio::steady_timer timer(ioc);
    const auto deadline = std::chrono::steady_clock::now() + config.limits.shutdown_grace;
    while (active_requests > 0 && std::chrono::steady_clock::now() < deadline) {
      timer.expires_after(std::chrono::milliseconds(50));
      co_await timer.async_wait(use_awaitable);
    }
    ioc.stop();
  }
};

std::string Server::Impl::json_error_line(const std::string& message) {
  return json_error_body(message) + "\n";
}

Server::Server(ServerConfig config, Router router)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(router))) {}

Server::~Server() = default;

namespace {

// Go raises the soft file limit to the hard one at start-up; so do we, and keep the connection
// cap below it with room for blobs, the catalog and pipes.
size_t usable_connection_slots() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return SIZE_MAX;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  constexpr rlim_t kReserved = 128;
  return lim.rlim_cur > 2 * kReserved ? static_cast<size_t>(lim.rlim_cur - kReserved)
                                      : static_cast<size_t>(lim.rlim_cur / 2);
}

}  // namespace

size_t max_connections_from_env() {
  constexpr size_t kDefault = 2048;
  const std::string v = env_value("VKLLM_MAX_CONNECTIONS");
  size_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || n == 0) return kDefault;
  return n;
}

void Server::listen() {
  auto& limits = impl_->config.limits;
  limits.max_connections =
      std::max<size_t>(1, std::min(limits.max_connections, usable_connection_slots()));
  impl_->bind();
}
uint16_t Server::port() const {
  return impl_->port;
}
std::string Server::bound_address() const {
  return impl_->bound;
}

void Server::run(bool handle_signals) {
  auto& ioc = impl_->ioc;
  for (auto& a : impl_->acceptors) asio::co_spawn(ioc, impl_->accept_loop(a), asio::detached);
  std::unique_ptr<asio::signal_set> signals;
  if (handle_signals) {
    signals = std::make_unique<asio::signal_set>(ioc, SIGINT, SIGTERM);
    signals->async_wait([this](const beast::error_code& ec, int) {
      if (!ec) impl_->begin_stop();
    });
  }
  // A handler that throws past its session (a library bug) costs that connection, not the server.
  const bool log = impl_->config.log_requests;
  auto serve = [&ioc, log] {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        if (log) log_line(std::string("[vkllm] error escaped a connection: ") + e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < std::max(1u, impl_->config.threads); ++i) threads.emplace_back(serve);
  serve();
  for (auto& t : threads) t.join();
}

void Server::stop() {
  impl_->begin_stop();
}

}  // namespace vkllm::http
