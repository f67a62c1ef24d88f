// libFuzzer target: raw request bytes through what a connection does with them — Beast's
// parser with the server's limits and read buffer, the framing checks, the router with the
// server's route shapes, then the body (chunked or sized) — must end in a parse error or a
// request, never an exception or a read out of bounds. Inputs are cut into reads of varying
// size, as a socket delivers them.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "server/http/request_head.h"
#include "server/http/router.h"

namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
using vkllm::http::Method;

volatile size_t g_sink;

const vkllm::http::Router& router() {
  static const vkllm::http::Router r = [] {
    vkllm::http::Router x;
    const vkllm::http::Handler none;
    for (const char* p : {"/", "/api/version", "/api/tags", "/api/show", "/api/chat", "/api/pull",
                          "/api/blobs/:digest", "/v1/models/:model", "/v2/*rest", "/ui/*path"}) {
      x.add(Method::get, p, none);
      x.add(Method::post, p, none);
    }
    return x;
  }();
  return r;
}

// Moves up to `want` input bytes into the buffer, as one socket read would; false at the end or
// when the buffer is full (the session then answers 431/400 and closes).
bool read_some(beast::flat_buffer& buffer, const uint8_t*& data, size_t& size, size_t want) {
  const size_t room = buffer.max_size() - buffer.size();
  const size_t n = std::min({want, size, room});
  if (n == 0) return false;
  auto space = buffer.prepare(n);
  std::memcpy(space.data(), data, n);
  buffer.commit(n);
  data += n;
  size -= n;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the read size, so short and long reads are both explored.
  const size_t step = 1 + data[0] * 37 % 4096;
  ++data;
  --size;
  beast::flat_buffer buffer(vkllm::http::kReadBufferLimit);
  for (int request = 0; request < 4; ++request) {  // keep-alive: several requests in a row
    vkllm::http::RequestParser parser;
    vkllm::http::limit_request_parser(parser, 1 << 20);
    beast::error_code ec;
    while (!parser.is_header_done()) {
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == bhttp::error::need_more || (!ec && used == 0)) {
        // Beast only parses what it has; like its read loop, give it more or stop.
        ec = {};
        if (!read_some(buffer, data, size, step)) return 0;
        continue;
      }
      if (ec) return 0;
    }
    if (!vkllm::http::framing_problem(parser).empty()) return 0;
    const auto& req = parser.get();
    const auto target = req.target();
    const auto path = std::string_view(target.data(), target.size()).substr(0, target.find('?'));
    const auto match = router().match(vkllm::http::parse_method(std::string_view(
                                          req.method_string().data(), req.method_string().size())),
                                      path);
    g_sink = g_sink + static_cast<size_t>(match.kind) + match.params.size();
    char body[1024];
    while (!parser.is_done()) {
      parser.get().body().data = body;
      parser.get().body().size = sizeof body;
      const size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec == bhttp::error::need_more || (!ec && used == 0)) {
        ec = {};
        if (!read_some(buffer, data, size, step)) {
          parser.put_eof(ec);  // the connection ended mid-body
          return 0;
        }
        continue;
      }
      if (ec) return 0;
    }
    if (!req.keep_alive()) return 0;
  }
  return 0;
}
