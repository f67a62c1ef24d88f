#include "server/cli/api_client.h"

#include <fstream>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "engine/engine_version.h"

namespace vkllm::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Connection {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
};

std::unique_ptr<Connection> connect(const http::HostAddress& host) {
  if (host.scheme == "https") {
    throw ApiError(0, "OLLAMA_HOST uses https, which the vkllm CLI does not speak; use http://");
  }
  auto c = std::make_unique<Connection>();
  beast::error_code ec;
  tcp::resolver resolver(c->ioc);
  const auto results = resolver.resolve(host.client_host(), std::to_string(host.port), ec);
  if (!ec) c->stream.connect(results, ec);
  if (ec) {
    throw ApiError(0, "could not connect to vkllm server at " + host.base_url() + " (" +
                          ec.message() + "), run 'vkllm serve' to start it");
  }
  return c;
}

std::string target_with_prefix(const http::HostAddress& host, std::string_view target) {
  return host.path.empty() ? std::string(target) : "/" + host.path + std::string(target);
}

template <class Body>
void set_common(bhttp::request<Body>& req, const http::HostAddress& host) {
  http::HostAddress connect_to = host;
  connect_to.host = host.client_host();
  req.set(bhttp::field::host, connect_to.host_port());
  req.set(bhttp::field::user_agent, "vkllm/" + std::string(vkllm::version()));
  req.set(bhttp::field::accept, "application/x-ndjson, application/json");
}

}  // namespace

std::string error_text(const ApiResponse& r) {
  try {
    const auto j = nlohmann::json::parse(r.body);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) {
      return j["error"].get<std::string>();
    }
  } catch (const std::exception&) {
  }
  if (!r.body.empty()) return r.body;
  return "HTTP status " + std::to_string(r.status);
}

ApiClient::ApiClient(http::HostAddress host) : host_(std::move(host)) {}

void ApiClient::heartbeat() {
  const auto r = request("HEAD", "/");
  if (r.status != 200)
    throw ApiError(r.status, "server at " + host_.base_url() + " answered " +
                                 std::to_string(r.status) + " to HEAD /");
}

ApiResponse ApiClient::request(std::string_view method, std::string_view target,
                               const std::optional<nlohmann::json>& body) {
  auto c = connect(host_);
  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(method),
                                         target_with_prefix(host_, target), 11};
  set_common(req, host_);
  if (body) {
    req.set(bhttp::field::content_type, "application/json");
    req.body() = body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  req.prepare_payload();
  bhttp::write(c->stream, req);
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(uint64_t{1} << 30);
  if (method == "HEAD") parser.skip(true);
  bhttp::read(c->stream, c->buffer, parser);
  return {parser.get().result_int(), parser.get().body()};
}

ApiResponse ApiClient::call(std::string_view method, std::string_view target,
                            const std::optional<nlohmann::json>& body) {
  auto r = request(method, target, body);
  if (r.status < 200 || r.status >= 300) throw ApiError(r.status, error_text(r));
  return r;
}

void ApiClient::stream(std::string_view target, const nlohmann::json& body,
                       const std::function<void(const nlohmann::json&)>& on_line) {
  auto c = connect(host_);
  bhttp::request<bhttp::string_body> req{bhttp::verb::post, target_with_prefix(host_, target), 11};
  set_common(req, host_);
  req.set(bhttp::field::content_type, "application/json");
  req.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  req.prepare_payload();
  bhttp::write(c->stream, req);

  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);
  bhttp::read_header(c->stream, c->buffer, parser);
  const unsigned status = parser.get().result_int();
  std::string pending, whole;
  std::vector<char> buf(64 * 1024);
  auto take_lines = [&](bool final) {
    size_t start = 0;
    for (;;) {
      const auto nl = pending.find('\n', start);
      if (nl == std::string::npos) break;
      const std::string line = pending.substr(start, nl - start);
      start = nl + 1;
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      const auto j = nlohmann::json::parse(line);
      if (j.is_object() && j.contains("error")) {
        throw ApiError(status, j["error"].is_string() ? j["error"].get<std::string>() : j.dump());
      }
      on_line(j);
    }
    pending.erase(0, start);
    if (final && pending.find_first_not_of(" \r\t\n") != std::string::npos) {
      const auto j = nlohmann::json::parse(pending);
      if (j.is_object() && j.contains("error")) {
        throw ApiError(status, j["error"].is_string() ? j["error"].get<std::string>() : j.dump());
      }
      on_line(j);
    }
  };
  while (!parser.is_done()) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    beast::error_code ec;
    bhttp::read(c->stream, c->buffer, parser, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) throw ApiError(status, "reading the response: " + ec.message());
    const size_t got = buf.size() - parser.get().body().size;
    if (status < 200 || status >= 300) {
      whole.append(buf.data(), got);
    } else {
      pending.append(buf.data(), got);
      take_lines(false);
    }
  }
  if (status < 200 || status >= 300) throw ApiError(status, error_text({status, whole}));
  take_lines(true);
}

ApiResponse ApiClient::upload(std::string_view target, const std::filesystem::path& file,
                              const std::function<void(uint64_t, uint64_t)>& progress) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ApiError(0, "cannot open " + file.string());
  const uint64_t total = std::filesystem::file_size(file);
  auto c = connect(host_);
  bhttp::request<bhttp::buffer_body> req{bhttp::verb::post, target_with_prefix(host_, target), 11};
  set_common(req, host_);
  req.set(bhttp::field::content_type, "application/octet-stream");
  req.content_length(total);
  req.body().data = nullptr;
  req.body().more = true;
  bhttp::request_serializer<bhttp::buffer_body> sr{req};
  bhttp::write_header(c->stream, sr);
  std::vector<char> buf(1 << 20);
  uint64_t sent = 0;
  beast::error_code ec;
  while (sent < total) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min<uint64_t>(buf.size(), total - sent)));
    const auto n = static_cast<size_t>(in.gcount());
    if (n == 0) throw ApiError(0, "short read from " + file.string());
    req.body().data = buf.data();
    req.body().size = n;
    req.body().more = sent + n < total;
    bhttp::write(c->stream, sr, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) break;  // the server may have answered early (e.g. the blob already exists)
    sent += n;
    if (progress) progress(sent, total);
  }
  if (!ec && !sr.is_done()) {
    req.body().data = nullptr;
    req.body().more = false;
    bhttp::write(c->stream, sr, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
  }
  bhttp::response<bhttp::string_body> res;
  beast::error_code rec;
  bhttp::read(c->stream, c->buffer, res, rec);
  if (rec) throw ApiError(0, "uploading " + file.string() + ": " + (ec ? ec : rec).message());
  return {res.result_int(), res.body()};
}

}  // namespace vkllm::cli
