#include "server/http/server.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
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

#include "engine/engine_version.h"
#include "server/http/error_reply.h"
#include "server/http/exchange.h"
#include "server/http/request_head.h"
#include "server/http/session_exchange.h"
#include "server/http/wake_up.h"

namespace vkllm::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;

namespace {

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
  // A connection closed while the cap held the accept loops back: one wake-up per acceptor's
  // loop, made before any loop starts.
  std::vector<std::unique_ptr<WakeUp>> slot_freed;
  // The last running request ended while stopping.
  WakeUp requests_ended{ioc.get_executor()};

  Impl(ServerConfig c, Router r)
      : config(std::move(c)), router(std::move(r)), ioc(static_cast<int>(config.threads)) {
    body_budget.limit = config.limits.body_bytes_in_flight;
  }

  awaitable<void> accept_loop(tcp::acceptor& acceptor, WakeUp& slot) {
    asio::steady_timer pause(acceptor.get_executor());
    beast::error_code ignored;
    for (;;) {
      // At the cap, leave new clients in the kernel's queue until a connection closes.
      while (connections >= config.limits.max_connections && !stopping) co_await slot.wait();
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
    if (connections-- >= config.limits.max_connections) {
      for (auto& w : slot_freed) w->notify();
    }
  }

  // Answers before routing: CORS and Host checks. Returns true when it already responded.
  awaitable<bool> gatekeep(SessionExchange& ex) {
    // /api/version answers the Ollama API version vkllm implements; this says which vkllm it is.
    ex.add_header("X-Vkllm-Version", vkllm::version());
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
      const ErrorShape shape = error_shape_of(ex.path());
      co_await ex.respond(401, kJsonContentType,
                          error_body(shape, ApiKeyPolicy::unauthorized(shape)));
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
    std::optional<StatusError> failure;
    try {
      co_await (*match.handler)(ex);
    } catch (const std::exception& e) {
      failure = status_error_of(e);
    }
    if (ex.io_failed()) co_return;
    if (!failure && !ex.response_started()) failure.emplace(500, "handler sent no response");
    if (failure) {
      const ErrorShape shape = error_shape_of(ex.path());
      if (!ex.response_started()) {
        co_await ex.respond(failure->status(), kJsonContentType, error_body(shape, *failure));
      } else if (ex.sized()) {
        ex.set_keep_alive(false);  // a fixed-length body cut short: only closing tells the client
      } else if (!ex.finished()) {
        // Mid-stream: the status is gone; the client reads the stream's final error line.
        co_await ex.write_chunk(stream_error(shape, *failure));
      }
    }
    if (!ex.finished()) co_await ex.finish_chunked();
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
      RequestParser parser;
      limit_request_parser(parser, config.limits.header_bytes);
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
      // Stopping, the shutdown waits for the last request (it set `stopping` before its check).
      if (--active_requests == 0 && stopping) requests_ended.notify();
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
      if (config.on_shutdown.draining) config.on_shutdown.draining();
      for (auto& a : acceptors) {
        beast::error_code ec;
        a.close(ec);
      }
      for (auto& w : slot_freed) w->notify();  // a loop held at the cap sees `stopping`
      asio::co_spawn(ioc, wait_for_requests(), asio::detached);
    });
  }

  // Waits up to `limit` for the running requests to end; true if they did.
  awaitable<bool> requests_ended_within(std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (active_requests > 0 && std::chrono::steady_clock::now() < deadline) {
      co_await requests_ended.wait_until(deadline);
    }
    co_return active_requests == 0;
  }

  awaitable<void> wait_for_requests() {
    const bool ended = co_await requests_ended_within(config.limits.shutdown_grace);
    if (!ended && config.on_shutdown.grace_expired) {
      if (config.log_requests) {
        log_line("[vkllm] " + std::to_string(active_requests.load()) +
                 " request(s) still running after the shutdown grace: ending them");
      }
      config.on_shutdown.grace_expired();
      co_await requests_ended_within(config.limits.shutdown_finish);
    }
    ioc.stop();
  }
};

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
  auto& slots = impl_->slot_freed;
  for (size_t i = slots.size(); i < impl_->acceptors.size(); ++i) {
    slots.push_back(std::make_unique<WakeUp>(ioc.get_executor()));
  }
  for (size_t i = 0; i < impl_->acceptors.size(); ++i) {
    asio::co_spawn(ioc, impl_->accept_loop(impl_->acceptors[i], *slots[i]), asio::detached);
  }
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

bool Server::stopping() const {
  return impl_->stopping.load();
}

}  // namespace vkllm::http
