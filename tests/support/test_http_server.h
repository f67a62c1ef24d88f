// Test fixture: a tiny HTTP/1.1 server (Boost.Beast, blocking, one connection at a time) on
// 127.0.0.1 with a free port, answering every request with a handler the test supplies. Used
// to play registries that misbehave on purpose: demand tokens, redirect, fail, lie. Given a
// TLS context it speaks HTTPS and remembers the server name (SNI) the client asked for.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace vkllm::test {

struct TestRequest {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct TestResponse {
  TestResponse() = default;
  TestResponse(unsigned status_code,
               std::vector<std::pair<std::string, std::string>> header_list = {},
               std::string body_text = {})
      : status(status_code), headers(std::move(header_list)), body(std::move(body_text)) {}

  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool omit_body = false;  // for HEAD: send Content-Length of `body` but no bytes
  // Announce all of `body` but send only this many bytes, then drop the connection.
  std::optional<size_t> send_only;
};

// Answers a GET/HEAD for `bytes`, honouring a single "Range: bytes=S-E" (206 + Content-Range).
inline TestResponse serve_bytes(const TestRequest& req, const std::string& bytes) {
  TestResponse res;
  res.headers.emplace_back("Content-Type", "application/octet-stream");
  auto range = req.header("range");
  if (range.starts_with("bytes=")) {
    auto dash = range.find('-');
    uint64_t start = std::stoull(range.substr(6, dash - 6));
    uint64_t end = dash + 1 < range.size() ? std::stoull(range.substr(dash + 1)) : bytes.size() - 1;
    end = std::min<uint64_t>(end, bytes.size() - 1);
    res.status = 206;
    res.body = bytes.substr(start, end - start + 1);
    res.headers.emplace_back("Content-Range", "bytes " + std::to_string(start) + "-" +
                                                  std::to_string(end) + "/" +
                                                  std::to_string(bytes.size()));
  } else {
    res.body = bytes;
  }
  res.omit_body = req.method == "HEAD";
  return res;
}

class TestHttpServer {
 public:
  using Handler = std::function<TestResponse(const TestRequest&)>;

  explicit TestHttpServer(Handler handler, boost::asio::ssl::context* tls = nullptr)
      : handler_(std::move(handler)),
        tls_(tls),
        acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }

  ~TestHttpServer() {
    stopping_ = true;
    // Wake the blocking accept with a connection of our own.
    boost::system::error_code ignored;
    boost::asio::ip::tcp::socket waker(ioc_);
    waker.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ignored);
    thread_.join();
  }

  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  uint16_t port() const { return port_; }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string url(const std::string& target = "") const { return "http://" + host() + target; }
  unsigned requests() const { return requests_; }
  // The server name of the last TLS handshake ("" for none).
  std::string last_server_name() const {
    std::lock_guard lock(mutex_);
    return last_server_name_;
  }

 private:
  void serve() {
    while (!stopping_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(ioc_);
      acceptor_.accept(socket, ec);
      if (ec || stopping_) continue;
      if (tls_) {
        boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(socket, *tls_);
        stream.handshake(boost::asio::ssl::stream_base::server, ec);
        if (ec) continue;
        if (const char* name =
                SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name)) {
          std::lock_guard lock(mutex_);
          last_server_name_ = name;
        }
        answer(stream);
      } else {
        answer(socket);
      }
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  template <class Stream>
  void answer(Stream& stream) {
    namespace http = boost::beast::http;
    boost::system::error_code ec;
    boost::beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.body_limit(uint64_t{1} << 30);
    http::read(stream, buffer, parser, ec);
    if (ec) return;
    ++requests_;
    auto& msg = parser.get();
    TestRequest req{std::string(msg.method_string()), std::string(msg.target()), {}, msg.body()};
    for (const auto& field : msg) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string(field.value());
    }
    TestResponse res;
    try {
      res = handler_(req);
    } catch (const std::exception& e) {
      res = TestResponse{500, {}, std::string("test handler threw: ") + e.what()};
    }
    http::response<http::string_body> out{static_cast<http::status>(res.status), 11};
    for (const auto& [name, value] : res.headers) out.set(name, value);
    out.set(http::field::connection, "close");
    if (res.omit_body || res.send_only) {
      out.content_length(res.body.size());
      http::response_serializer<http::string_body> serializer{out};
      http::write_header(stream, serializer, ec);
      if (res.send_only && !ec) {
        boost::asio::write(
            stream, boost::asio::buffer(res.body.data(), std::min(*res.send_only, res.body.size())),
            ec);
      }
    } else {
      out.body() = std::move(res.body);
      out.prepare_payload();
      http::write(stream, out, ec);
    }
  }

  Handler handler_;
  boost::asio::ssl::context* tls_;
  mutable std::mutex mutex_;
  std::string last_server_name_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<unsigned> requests_{0};
  std::thread thread_;
};

}  // namespace vkllm::test
