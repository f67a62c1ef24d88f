// A small HTTP/1.1 load generator (wrk-like) for the server's own benchmarks and the loopback
// load test: N keep-alive connections issue requests round-robin over a list for a fixed time,
// optionally alongside "slowloris" connections that trickle a never-ending header. Prints
// requests/s, latency percentiles and errors. Exit status 1 when any request failed.
//
//   vkllm_http_load --port 11434 --connections 500 --seconds 10 --threads 1
//       --request "GET /api/tags" --request 'POST /api/show {"model":"m"}' --slowloris 50
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  uint16_t port = 11434;
  int connections = 100;
  int slowloris = 0;
  double seconds = 10;
  int threads = 1;
  std::vector<std::string> requests;  // "METHOD /path [body]"
};

struct Stats {
  std::mutex mutex;
  std::vector<uint32_t> micros;
  std::atomic<uint64_t> errors{0}, bad_status{0}, slow_closed{0};
  std::string first_error;
  void error(const std::string& what) {
    ++errors;
    std::lock_guard lock(mutex);
    if (first_error.empty()) first_error = what;
  }
};

std::string wire_request(const std::string& spec, const std::string& host) {
  const auto sp = spec.find(' ');
  const std::string method = spec.substr(0, sp);
  std::string rest = sp == std::string::npos ? "/" : spec.substr(sp + 1);
  const auto sp2 = rest.find(' ');
  const std::string target = rest.substr(0, sp2);
  const std::string body = sp2 == std::string::npos ? "" : rest.substr(sp2 + 1);
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n";
  if (!body.empty() || method == "POST") {
    r +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

awaitable<void> client(tcp::endpoint ep, const std::vector<std::string>& wires, size_t offset,
                       Clock::time_point deadline, Stats& stats) {
  auto ex = co_await asio::this_coro::executor;
  std::vector<uint32_t> local;
  size_t next = offset;
  while (Clock::now() < deadline) {
    beast::tcp_stream stream(ex);
    beast::error_code ec;
    co_await stream.async_connect(ep, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      stats.error("connect: " + ec.message());
      continue;
    }
    beast::flat_buffer buffer;
    while (Clock::now() < deadline) {
      const std::string& wire = wires[next++ % wires.size()];
      const auto start = Clock::now();
      stream.expires_after(std::chrono::seconds(30));
      co_await asio::async_write(stream, asio::buffer(wire),
                                 asio::redirect_error(use_awaitable, ec));
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(64 << 20);
      if (!ec)
        co_await bhttp::async_read(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
      if (ec) {
        stats.error(ec.message());
        break;
      }
      local.push_back(static_cast<uint32_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count()));
      if (parser.get().result_int() >= 300) {
        ++stats.bad_status;
        stats.error("status " + std::to_string(parser.get().result_int()) + " for " +
                    wire.substr(0, wire.find('\r')));
      }
      if (!parser.get().keep_alive()) break;
    }
  }
  std::lock_guard lock(stats.mutex);
  stats.micros.insert(stats.micros.end(), local.begin(), local.end());
}

// Sends a request line and then one header line a second, never finishing; reconnects when the
// server closes (which is what it should do).
awaitable<void> slowloris(tcp::endpoint ep, Clock::time_point deadline, Stats& stats) {
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer timer(ex);
  while (Clock::now() < deadline) {
    tcp::socket s(ex);
    beast::error_code ec;
    co_await s.async_connect(ep, asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
    // A read that ends when the server closes (it never answers a header that never ends).
    auto closed = std::make_shared<bool>(false);
    asio::co_spawn(
        ex,
        [&s, closed]() -> awaitable<void> {
          char c;
          beast::error_code read_ec;
          co_await s.async_read_some(asio::buffer(&c, 1),
                                     asio::redirect_error(use_awaitable, read_ec));
          *closed = true;
        },
        asio::detached);
    std::string line = "GET /api/tags HTTP/1.1\r\nHost: localhost\r\n";
    while (!ec && !*closed && Clock::now() < deadline) {
      co_await asio::async_write(s, asio::buffer(line), asio::redirect_error(use_awaitable, ec));
      line = "X-Slow: 1\r\n";
      timer.expires_after(std::chrono::milliseconds(250));
      beast::error_code timer_ec;
      co_await timer.async_wait(asio::redirect_error(use_awaitable, timer_ec));
    }
    if (ec || *closed) ++stats.slow_closed;
    s.close(ec);
    // Let the reader see the cancellation before the socket goes.
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
  }
}

double percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p / 100.0 * sorted.size()));
  return sorted[i] / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--host")
      o.host = value();
    else if (a == "--port")
      o.port = static_cast<uint16_t>(std::stoi(value()));
    else if (a == "--connections")
      o.connections = std::stoi(value());
    else if (a == "--slowloris")
      o.slowloris = std::stoi(value());
    else if (a == "--seconds")
      o.seconds = std::stod(value());
    else if (a == "--threads")
      o.threads = std::stoi(value());
    else if (a == "--request")
      o.requests.push_back(value());
    else {
      std::cerr << "unknown option " << a << "\n";
      return 2;
    }
  }
  if (o.requests.empty()) o.requests.push_back("GET /api/version");
  std::vector<std::string> wires;
  for (const auto& r : o.requests) wires.push_back(wire_request(r, o.host));
  const tcp::endpoint ep(asio::ip::make_address(o.host), o.port);

  Stats stats;
  asio::io_context ioc(o.threads);
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  for (int i = 0; i < o.slowloris; ++i)
    asio::co_spawn(ioc, slowloris(ep, deadline, stats), asio::detached);
  for (int i = 0; i < o.connections; ++i) {
    asio::co_spawn(ioc, client(ep, wires, static_cast<size_t>(i), deadline, stats), asio::detached);
  }
  std::vector<std::thread> threads;
  for (int i = 1; i < o.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  auto& m = stats.micros;
  std::sort(m.begin(), m.end());
  std::printf(
      "connections=%d slowloris=%d seconds=%.1f requests=%zu rps=%.0f p50_ms=%.2f p90_ms=%.2f "
      "p99_ms=%.2f max_ms=%.2f errors=%llu bad_status=%llu slowloris_closed=%llu\n",
      o.connections, o.slowloris, elapsed, m.size(), m.size() / elapsed, percentile(m, 50),
      percentile(m, 90), percentile(m, 99), m.empty() ? 0.0 : m.back() / 1000.0,
      static_cast<unsigned long long>(stats.errors.load()),
      static_cast<unsigned long long>(stats.bad_status.load()),
      static_cast<unsigned long long>(stats.slow_closed.load()));
  if (!stats.first_error.empty()) std::printf("first error: %s\n", stats.first_error.c_str());
  return stats.errors > 0 ? 1 : 0;
}
