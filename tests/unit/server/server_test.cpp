// The real HTTP server on a loopback port, driven by a Beast client: keep-alive, streaming,
// errors before and after a stream began, limits, HEAD, 100-continue, CORS and shutdown.
#include "server/http/server.h"

#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <chrono>
#include <future>
#include <initializer_list>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "registry/errors.h"
#include "server/http/exchange.h"
#include "server/http/private_paths.h"
#include "server/http/streams.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::awaitable;
using vkllm::http::Exchange;
using vkllm::http::Method;
using vkllm::http::StatusError;

namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start(); }

  // (Re)starts the server with the test routes and the fixture's limits, as `tweak` adjusts them.
  void start(const std::function<void(vkllm::http::ServerConfig&)>& tweak = {}) {
    if (server_) TearDown();
    vkllm::http::Router r;
    r.add(Method::get, "/hello", [](Exchange& ex) -> awaitable<void> {
      co_await ex.respond(200, vkllm::http::kTextContentType, "hi");
    });
    r.add(Method::head, "/hello", [](Exchange& ex) -> awaitable<void> {
      co_await ex.respond(200, vkllm::http::kTextContentType, "hi");
    });
    r.add(Method::post, "/echo", [](Exchange& ex) -> awaitable<void> {
      std::string body = co_await ex.read_body();
      co_await ex.respond(200, "application/octet-stream", std::move(body));
    });
    r.add(Method::post, "/count", [](Exchange& ex) -> awaitable<void> {
      std::vector<char> buf(1000);
      size_t total = 0, n;
      while ((n = co_await ex.read_body_some(buf)) > 0) total += n;
      co_await ex.respond(200, "text/plain", std::to_string(total));
    });
    r.add(Method::get, "/stream/:n", [](Exchange& ex) -> awaitable<void> {
      vkllm::http::NdjsonStream out(ex);
      const int n = std::stoi(ex.param("n"));
      for (int i = 0; i < n; ++i) {
        nlohmann::json line;
        line["i"] = i;
        co_await out.send(line);
      }
      if (ex.query_param("fail")) throw StatusError(500, "boom after " + std::to_string(n));
      co_await out.finish();
    });
    r.add(Method::get, "/fail", [](Exchange&) -> awaitable<void> {
      throw StatusError(418, "teapot");
      co_return;
    });
    // A registry error escaping a handler, under each API family's paths.
    for (const char* path : {"/api/missing", "/v1/missing", "/v1/messages/missing"}) {
      r.add(Method::get, path, [](Exchange&) -> awaitable<void> {
        throw vkllm::registry::RegistryError(vkllm::registry::ErrorKind::not_found,
                                             "no such model");
        co_return;
      });
    }
    // Holds the request open for the given milliseconds before reading its body.
    r.add(Method::post, "/slow/:ms", [](Exchange& ex) -> awaitable<void> {
      asio::steady_timer timer(ex.executor());
      timer.expires_after(std::chrono::milliseconds(std::stoi(ex.param("ms"))));
      co_await timer.async_wait(asio::use_awaitable);
      std::string body = co_await ex.read_body();
      co_await ex.respond(200, "text/plain", std::to_string(body.size()));
    });
    // Waits (without writing) until told the client left or 5 s pass; answers "waited" then.
    r.add(Method::post, "/wait", [this](Exchange& ex) -> awaitable<void> {
      std::string body = co_await ex.read_body();
      asio::steady_timer timer(ex.executor());
      timer.expires_after(std::chrono::seconds(5));
      ex.on_disconnect([this, &timer] {
        told_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
        timer.cancel();
      });
      beast::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      co_await ex.respond(200, "text/plain", "waited " + body);
    });
    // Streams a line every 10 ms for up to 5 s, stopping when told the client left. A write that
    // meets the closed socket first ends it too, by throwing: handler_done_ is set either way.
    r.add(Method::get, "/ticks", [this](Exchange& ex) -> awaitable<void> {
      struct Done {
        std::atomic<bool>& flag;
        std::atomic<std::chrono::steady_clock::rep>& at;
        ~Done() {
          at = std::chrono::steady_clock::now().time_since_epoch().count();
          flag = true;
        }
      } done{handler_done_, done_at_};
      bool gone = false;
      ex.on_disconnect([this, &gone] {
        told_at_ = std::chrono::steady_clock::now().time_since_epoch().count();
        gone = true;
      });
      vkllm::http::NdjsonStream out(ex);
      asio::steady_timer timer(ex.executor());
      for (int i = 0; i < 500 && !gone; ++i) {
        nlohmann::json line;
        line["i"] = i;
        co_await out.send(line);
        timer.expires_after(std::chrono::milliseconds(10));
        co_await timer.async_wait(asio::use_awaitable);
      }
      if (!gone) co_await out.finish();
    });
    vkllm::http::ServerConfig config;
    config.address = vkllm::http::parse_ollama_host("127.0.0.1:0");
    config.limits.body_bytes = 4096;
    config.limits.header_bytes = 2048;
    config.limits.shutdown_grace = std::chrono::seconds(2);
    config.threads = 2;
    config.log_requests = false;
    if (tweak) tweak(config);
    server_ = std::make_unique<vkllm::http::Server>(std::move(config), std::move(r));
    server_->listen();
    thread_ = std::thread([this] { server_->run(false); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
    server_.reset();
  }

  // Whether the socket has something to read (data or EOF) within `ms`.
  static bool readable_within(asio::ip::tcp::socket& s, int ms) {
    pollfd p{s.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
  }

  // Writes raw bytes, then reads one response; the status, or 0 when the server closed first.
  unsigned raw_status(asio::ip::tcp::socket& s, const std::string& bytes) {
    beast::error_code ec;
    asio::write(s, asio::buffer(bytes), ec);  // the server may refuse and close before the end
    bhttp::response<bhttp::string_body> res;
    bhttp::read(s, buffer_, res, ec);
    return ec ? 0 : res.result_int();
  }

  // True when the server closes the connection (EOF or reset) within `ms`, without sending more.
  bool closed_within(asio::ip::tcp::socket& s, int ms) {
    if (!readable_within(s, ms)) return false;
    char c;
    beast::error_code ec;
    const size_t n = s.read_some(asio::buffer(&c, 1), ec);
    return n == 0 && ec;
  }

  asio::ip::tcp::socket connect() {
    asio::ip::tcp::socket s(client_ioc_);
    s.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
    return s;
  }

  bhttp::response<bhttp::string_body> roundtrip(asio::ip::tcp::socket& s,
                                                bhttp::request<bhttp::string_body> req) {
    req.set(bhttp::field::host, "localhost");
    req.prepare_payload();
    bhttp::write(s, req);
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(1 << 20);
    if (req.method() == bhttp::verb::head) p.skip(true);
    bhttp::read(s, buffer_, p);
    return p.release();
  }

  bhttp::response<bhttp::string_body> request(bhttp::verb verb, std::string target,
                                              std::string body = {}) {
    auto s = connect();
    bhttp::request<bhttp::string_body> req{verb, target, 11};
    req.body() = std::move(body);
    return roundtrip(s, std::move(req));
  }

  // Milliseconds from `since` until the first of `stamps` was set (whichever came first); -1 if
  // none within 2 s.
  double first_stamp_after_ms(
      std::chrono::steady_clock::time_point since,
      std::initializer_list<const std::atomic<std::chrono::steady_clock::rep>*> stamps) {
    const auto first = [&] {
      std::chrono::steady_clock::rep at = 0;
      for (const auto* s : stamps)
        if (const auto v = s->load(); v != 0 && (at == 0 || v < at)) at = v;
      return at;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (first() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const auto at = first();
    if (at == 0) return -1;
    const std::chrono::steady_clock::time_point t{std::chrono::steady_clock::duration(at)};
    return std::chrono::duration<double, std::milli>(t - since).count();
  }

  // Milliseconds from `since` until the handler was told the client left; -1 if not within 2 s.
  double told_after_ms(std::chrono::steady_clock::time_point since) {
    return first_stamp_after_ms(since, {&told_at_});
  }

  std::atomic<std::chrono::steady_clock::rep> told_at_{0};
  std::atomic<std::chrono::steady_clock::rep> done_at_{0};
  std::atomic<bool> handler_done_{false};
  asio::io_context client_ioc_;
  beast::flat_buffer buffer_;
  std::unique_ptr<vkllm::http::Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  auto s = connect();
  for (int i = 0; i < 3; ++i) {
    auto res = roundtrip(s, {bhttp::verb::get, "/hello", 11});
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "hi");
    EXPECT_TRUE(res.keep_alive());
  }
}

TEST_F(ServerTest, HeadSendsLengthWithoutBody) {
  auto s = connect();
  auto res = roundtrip(s, {bhttp::verb::head, "/hello", 11});
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[bhttp::field::content_length], "2");
  // The connection is still in step: the next response is read correctly.
  auto next = roundtrip(s, {bhttp::verb::get, "/hello", 11});
  EXPECT_EQ(next.body(), "hi");
}

TEST_F(ServerTest, NdjsonStreamIsChunkedOneObjectPerLine) {
  auto res = request(bhttp::verb::get, "/stream/3");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[bhttp::field::content_type], "application/x-ndjson");
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(res.body(), "{\"i\":0}\n{\"i\":1}\n{\"i\":2}\n");
}

TEST_F(ServerTest, ErrorAfterStreamStartIsAFinalErrorLine) {
  auto res = request(bhttp::verb::get, "/stream/2?fail=1");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "{\"i\":0}\n{\"i\":1}\n{\"error\":\"boom after 2\"}\n");
}

TEST_F(ServerTest, ErrorBeforeResponseUsesStatusAndOllamaShape) {
  auto res = request(bhttp::verb::get, "/fail");
  EXPECT_EQ(res.result_int(), 418);
  EXPECT_EQ(res[bhttp::field::content_type], "application/json; charset=utf-8");
  EXPECT_EQ(nlohmann::json::parse(res.body())["error"], "teapot");
}

TEST_F(ServerTest, AFailureIsAnsweredWithItsStatusInThePathsApiShape) {
  const auto ollama = request(bhttp::verb::get, "/api/missing");
  EXPECT_EQ(ollama.result_int(), 404);
  EXPECT_EQ(nlohmann::json::parse(ollama.body())["error"], "no such model");
  const auto openai = request(bhttp::verb::get, "/v1/missing");
  EXPECT_EQ(openai.result_int(), 404);
  const auto o = nlohmann::json::parse(openai.body());
  EXPECT_EQ(o["error"]["message"], "no such model");
  EXPECT_EQ(o["error"]["type"], "not_found_error");
  const auto anthropic = request(bhttp::verb::get, "/v1/messages/missing");
  EXPECT_EQ(anthropic.result_int(), 404);
  const auto a = nlohmann::json::parse(anthropic.body());
  EXPECT_EQ(a["type"], "error");
  EXPECT_EQ(a["error"]["type"], "not_found_error");
  EXPECT_EQ(a["error"]["message"], "no such model");
}

TEST_F(ServerTest, UnknownRouteAndWrongMethod) {
  auto nf = request(bhttp::verb::get, "/nope");
  EXPECT_EQ(nf.result_int(), 404);
  EXPECT_EQ(nf.body(), "404 page not found");
  auto na = request(bhttp::verb::delete_, "/hello");
  EXPECT_EQ(na.result_int(), 405);
  EXPECT_EQ(na.body(), "405 method not allowed");
}

TEST_F(ServerTest, BodyLimitGives413AndStreamedBodiesAreUnlimited) {
  auto ok = request(bhttp::verb::post, "/echo", std::string(4096, 'a'));
  EXPECT_EQ(ok.result_int(), 200);
  EXPECT_EQ(ok.body().size(), 4096u);
  auto big = request(bhttp::verb::post, "/echo", std::string(4097, 'a'));
  EXPECT_EQ(big.result_int(), 413);
  EXPECT_TRUE(nlohmann::json::parse(big.body()).contains("error"));
  auto counted = request(bhttp::verb::post, "/count", std::string(100000, 'b'));
  EXPECT_EQ(counted.body(), "100000");
}

TEST_F(ServerTest, OversizedHeadersGet431) {
  auto s = connect();
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/hello", 11};
  req.set("X-Big", std::string(4000, 'x'));
  auto res = roundtrip(s, std::move(req));
  EXPECT_EQ(res.result_int(), 431);
}

TEST_F(ServerTest, ExpectContinueIsAnswered) {
  auto s = connect();
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, "/count", 11};
  req.set(bhttp::field::host, "localhost");
  req.set(bhttp::field::expect, "100-continue");
  req.body() = std::string(5000, 'c');
  req.prepare_payload();
  bhttp::request_serializer<bhttp::string_body> sr{req};
  bhttp::write_header(s, sr);
  bhttp::response<bhttp::empty_body> cont;
  bhttp::read(s, buffer_, cont);
  EXPECT_EQ(cont.result_int(), 100);
  bhttp::write(s, sr);
  bhttp::response<bhttp::string_body> res;
  bhttp::read(s, buffer_, res);
  EXPECT_EQ(res.body(), "5000");
}

TEST_F(ServerTest, CorsPreflightAndDisallowedOriginAndHost) {
  auto s = connect();
  bhttp::request<bhttp::string_body> pre{bhttp::verb::options, "/hello", 11};
  pre.set(bhttp::field::origin, "http://localhost:5173");
  auto res = roundtrip(s, std::move(pre));
  EXPECT_EQ(res.result_int(), 204);
  EXPECT_EQ(res[bhttp::field::access_control_allow_origin], "http://localhost:5173");
  EXPECT_NE(res[bhttp::field::access_control_allow_methods].find("POST"), std::string::npos);

  bhttp::request<bhttp::string_body> get{bhttp::verb::get, "/hello", 11};
  get.set(bhttp::field::origin, "http://localhost:5173");
  auto actual = roundtrip(s, std::move(get));
  EXPECT_EQ(actual.result_int(), 200);
  EXPECT_EQ(actual[bhttp::field::access_control_allow_origin], "http://localhost:5173");

  bhttp::request<bhttp::string_body> evil{bhttp::verb::get, "/hello", 11};
  evil.set(bhttp::field::origin, "http://evil.example");
  auto denied = roundtrip(s, std::move(evil));
  EXPECT_EQ(denied.result_int(), 403);
  EXPECT_TRUE(denied.body().empty());

  auto s2 = connect();
  bhttp::request<bhttp::string_body> rebind{bhttp::verb::get, "/hello", 11};
  rebind.set(bhttp::field::host, "attacker.example:11434");
  rebind.prepare_payload();
  bhttp::write(s2, rebind);
  bhttp::response<bhttp::string_body> r2;
  bhttp::read(s2, buffer_, r2);
  EXPECT_EQ(r2.result_int(), 403);
}

TEST_F(ServerTest, GarbageRequestGets400) {
  auto s = connect();
  asio::write(s, asio::buffer(std::string("NOT HTTP AT ALL\r\n\r\n")));
  bhttp::response<bhttp::string_body> res;
  beast::error_code ec;
  bhttp::read(s, buffer_, res, ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(res.result_int(), 400);
}

TEST_F(ServerTest, WaitingHandlerIsToldWhenTheClientCloses) {
  auto s = connect();
  asio::write(s, asio::buffer(std::string(
                     "POST /wait HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\nab")));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the handler is waiting now
  const auto closed = std::chrono::steady_clock::now();
  s.close();
  const double ms = told_after_ms(closed);
  EXPECT_GE(ms, 0) << "the handler was never told";
  EXPECT_LT(ms, 1000);  // promptly, not at the 5 s timeout (with room for a loaded CI)
}

TEST_F(ServerTest, StreamingHandlerStopsWhenTheClientCloses) {
  auto s = connect();
  asio::write(s, asio::buffer(std::string("GET /ticks HTTP/1.1\r\nHost: localhost\r\n\r\n")));
  char buf[256];
  s.read_some(asio::buffer(buf));  // headers and the first lines have arrived
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto closed = std::chrono::steady_clock::now();
  s.close();
  // Told, or (on a loaded machine, where its next write can meet the closed socket before the
  // disconnect watch sees the close) ended by that write: either stops the stream.
  const double ms = first_stamp_after_ms(closed, {&told_at_, &done_at_});
  EXPECT_GE(ms, 0) << "the handler was neither told nor stopped";
  EXPECT_LT(ms, 1000);  // promptly, not after its 500 ticks (with room for a loaded CI)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!handler_done_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(handler_done_) << "the stream went on after the client left";
}

TEST_F(ServerTest, PipelinedRequestIsKeptNotTakenForADisconnect) {
  auto s = connect();
  // Both requests at once: the second arrives while the first handler waits and watches.
  const std::string two =
      "POST /wait HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\r\nx"
      "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n";
  asio::write(s, asio::buffer(two));
  // Half a second in, the first handler is still waiting: it was not told the client left.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(told_at_, 0);
  s.shutdown(asio::ip::tcp::socket::shutdown_send);  // now the client is done sending
  bhttp::response<bhttp::string_body> first, second;
  bhttp::read(s, buffer_, first);
  EXPECT_EQ(first.body(), "waited x");
  bhttp::read(s, buffer_, second);
  EXPECT_EQ(second.result_int(), 200);
  EXPECT_EQ(second.body(), "hi");
}

TEST_F(ServerTest, HugeHeaderFieldOrTrailerIsRefusedAndTheServerLives) {
  start([](auto& c) { c.limits.header_bytes = 1 << 20; });  // even when configured above 64 KiB
  {
    auto s = connect();
    const unsigned status = raw_status(s, "GET /hello HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
                                              std::string(70000, 'v') + "\r\n\r\n");
    EXPECT_TRUE(status == 431 || status == 0) << status;
  }
  {
    auto s = connect();
    const unsigned status = raw_status(
        s, "GET /hello HTTP/1.1\r\nHost: localhost\r\n" + std::string(70000, 'n') + ": v\r\n\r\n");
    EXPECT_TRUE(status == 431 || status == 0) << status;
  }
  {
    auto s = connect();
    const unsigned status =
        raw_status(s,
                   "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                   "2\r\nab\r\n0\r\nX-Trailer: " +
                       std::string(70000, 't') + "\r\n\r\n");
    EXPECT_TRUE(status == 400 || status == 431 || status == 0) << status;
    EXPECT_TRUE(closed_within(s, 2000));
  }
  EXPECT_EQ(request(bhttp::verb::get, "/hello").body(), "hi");  // still serving
}

TEST_F(ServerTest, UnknownTransferEncodingIs400AndTheBodyIsNotARequest) {
  for (const std::string te : {"xchunked", "gzip", "chunked, identity", "", "gzip, chunked"}) {
    auto s = connect();
    const std::string hidden = "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n";
    const unsigned status =
        raw_status(s, "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: " + te +
                          "\r\n\r\n" + hidden);
    EXPECT_EQ(status, 400u) << "TE: " << te;
    EXPECT_TRUE(closed_within(s, 2000)) << "the hidden request was answered; TE: " << te;
  }
  auto s = connect();  // plain chunked still works
  EXPECT_EQ(
      raw_status(s,
                 "POST /echo HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\n0\r\n\r\n"),
      200u);
}

TEST_F(ServerTest, Http11NeedsExactlyOneHost) {
  {
    auto s = connect();
    EXPECT_EQ(raw_status(s, "GET /hello HTTP/1.1\r\n\r\n"), 400u);
    EXPECT_TRUE(closed_within(s, 2000));
  }
  {
    auto s = connect();
    EXPECT_EQ(raw_status(s, "GET /hello HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n"),
              400u);
  }
  auto s = connect();  // HTTP/1.0 may omit it
  EXPECT_EQ(raw_status(s, "GET /hello HTTP/1.0\r\n\r\n"), 200u);
}

TEST_F(ServerTest, SlowHeadersAndIdleConnectionsAreClosed) {
  start([](auto& c) {
    c.limits.header_timeout = std::chrono::seconds(1);
    c.limits.idle_timeout = std::chrono::seconds(1);
  });
  auto idle = connect();
  auto slow = connect();
  asio::write(slow, asio::buffer(std::string("GET /hello HTTP/1.1\r\n")));
  // A byte every 300 ms is progress, but the header is not done after the header timeout.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    beast::error_code ec;
    asio::write(slow, asio::buffer(std::string("X")), ec);
  }
  EXPECT_TRUE(closed_within(slow, 1500)) << "slowloris header kept open";
  EXPECT_TRUE(closed_within(idle, 1500)) << "idle connection kept open";
  // A keep-alive connection that made a request is closed once idle too.
  auto used = connect();
  EXPECT_EQ(roundtrip(used, {bhttp::verb::get, "/hello", 11}).body(), "hi");
  EXPECT_TRUE(closed_within(used, 2000));
}

TEST_F(ServerTest, SlowBodyIsCutOffByTheBodyTimeout) {
  start([](auto& c) { c.limits.body_timeout = std::chrono::seconds(1); });
  auto s = connect();
  asio::write(s, asio::buffer(std::string(
                     "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n")));
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    beast::error_code ec;
    asio::write(s, asio::buffer(std::string("y")), ec);
  }
  EXPECT_TRUE(closed_within(s, 1500));
}

TEST_F(ServerTest, ConnectionCapHoldsNewClientsUntilOneCloses) {
  start([](auto& c) { c.limits.max_connections = 3; });
  std::vector<asio::ip::tcp::socket> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(connect());
    EXPECT_EQ(roundtrip(held.back(), {bhttp::verb::get, "/hello", 11}).body(), "hi");
  }
  auto waiting = connect();  // queued by the kernel, not served
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/hello", 11};
  req.set(bhttp::field::host, "localhost");
  bhttp::write(waiting, req);
  EXPECT_FALSE(readable_within(waiting, 300)) << "served beyond the cap";
  held.front().close();
  EXPECT_TRUE(readable_within(waiting, 2000)) << "not served after a slot freed";
  bhttp::response<bhttp::string_body> res;
  bhttp::read(waiting, buffer_, res);
  EXPECT_EQ(res.body(), "hi");
}

TEST_F(ServerTest, BodiesInFlightAreBoundedAcrossConnections) {
  start([](auto& c) { c.limits.body_bytes_in_flight = 6000; });
  // The first request's 4000 bytes are held while its handler sleeps; a second 4000 does not fit.
  auto first = connect();
  const std::string body(4000, 'q');
  asio::write(
      first, asio::buffer("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4000\r\n\r\n" +
                          body.substr(0, 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto second = connect();
  EXPECT_EQ(
      raw_status(second,
                 "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4000\r\n\r\n" + body),
      503u);
  asio::write(first, asio::buffer(body.substr(10)));
  bhttp::response<bhttp::string_body> res;
  bhttp::read(first, buffer_, res);
  EXPECT_EQ(res.body().size(), 4000u);
  // Released with the request (just after its response went out): the same body fits again.
  unsigned status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    status = request(bhttp::verb::post, "/echo", body).result_int();
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 200u);
}

}  // namespace

namespace {

TEST(PrivatePaths, ErrorTextsLoseTheServersDirectories) {
  vkllm::http::hide_path("/srv/vkllm-test/models/");
  EXPECT_EQ(vkllm::http::without_private_paths(
                "cannot open /srv/vkllm-test/models/blobs/tmp/gguf-header-1: bad magic"),
            "cannot open blobs/tmp/gguf-header-1: bad magic");
  EXPECT_EQ(vkllm::http::without_private_paths("/srv/other/x"), "/srv/other/x");
}

}  // namespace
