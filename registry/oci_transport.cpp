#include "registry/oci_transport.h"

#include <openssl/evp.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <nlohmann/json.hpp>

#include "registry/bounded_json.h"
#include "registry/oci_challenge.h"

namespace vkllm::registry::oci {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using asio::use_awaitable;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

constexpr size_t kErrorBodyLimit = 16 * 1024;
constexpr size_t kTransferBuffer = 1 << 20;

std::string trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

std::string base64(std::string_view text) {
  std::string out(4 * ((text.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool is_redirect(unsigned status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// The registry cannot be reached at all (no DNS answer, no route, nothing listening): with no
// network these come at once, and backing off for seconds only delays the answer.
bool is_unreachable(const boost::system::error_code& ec) {
  return ec == asio::error::host_not_found || ec == asio::error::host_not_found_try_again ||
         ec == asio::error::no_data || ec == asio::error::no_recovery ||
         ec == asio::error::connection_refused || ec == asio::error::network_unreachable ||
         ec == asio::error::host_unreachable || ec == asio::error::network_down;
}

std::string origin_key(const OciUrl& url) {
  return url.scheme + "://" + url.authority();
}

}  // namespace

[[noreturn]] void fail_status(const Response& response) {
  auto body = trimmed(response.body);
  throw OciError(OciErrorKind::http, std::to_string(response.status) + ": " + body, response.status,
                 body);
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

bool is_transport_error(const boost::system::system_error& e) {
  return e.code() != asio::error::operation_aborted;
}

Transport::Transport(OciClientOptions opts) : options(std::move(opts)) {
  tls_.set_default_verify_paths();
  if (!options.extra_ca_file.empty()) tls_.load_verify_file(options.extra_ca_file);
  tls_.set_verify_mode(ssl::verify_peer);
}

void Transport::check_stop() const {
  if (stop_.stop_requested()) throw OciError(OciErrorKind::cancelled, "cancelled");
}

std::chrono::milliseconds Transport::backoff(unsigned attempt) const {
  auto delay = options.initial_backoff * (int64_t{1} << std::min(attempt - 1, 20u));
  return std::min<std::chrono::milliseconds>(delay, options.max_backoff);
}

awaitable<void> Transport::sleep(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(use_awaitable);
}

void Transport::run(std::stop_token token, std::vector<std::function<awaitable<void>()>>& tasks) {
  stop_ = token;
  std::exception_ptr first_error;
  asio::io_context ioc(1);
  for (auto& task : tasks) {
    asio::co_spawn(ioc, task(), [&](std::exception_ptr error) {
      if (error && !first_error) {
        first_error = error;
        ioc.stop();
      }
    });
  }
  {
    std::stop_callback on_stop(token, [&ioc] { ioc.stop(); });
    ioc.run();
  }
  check_stop();
  if (first_error) std::rethrow_exception(first_error);
}

void Transport::run_one(std::stop_token token, std::function<awaitable<void>()> task) {
  std::vector<std::function<awaitable<void>()>> tasks{std::move(task)};
  run(token, tasks);
}

// ---- one HTTP exchange on a fresh connection ----

template <class Stream>
awaitable<Response> Transport::exchange_on(Stream& stream, const Request& req, const Sink* sink) {
  auto& lowest = beast::get_lowest_layer(stream);
  http::request<http::buffer_body> msg{req.method, req.url.target, 11};
  msg.set(http::field::host, req.url.authority());
  msg.set(http::field::user_agent, options.user_agent);
  for (const auto& [name, value] : req.headers) msg.set(name, value);
  uint64_t body_size = req.source ? req.source->size : req.body.size();
  bool sends_body = req.method == http::verb::put || req.method == http::verb::post ||
                    req.method == http::verb::patch || body_size > 0;
  if (sends_body) msg.content_length(body_size);

  http::request_serializer<http::buffer_body> serializer{msg};
  lowest.expires_after(options.io_timeout);
  if (!req.source || req.source->size == 0) {
    msg.body().data = req.body.empty() ? nullptr : const_cast<char*>(req.body.data());
    msg.body().size = req.body.size();
    msg.body().more = false;
    co_await http::async_write(stream, serializer, use_awaitable);
  } else {
    const BodySource& source = *req.source;
    msg.body().data = nullptr;
    msg.body().more = true;
    co_await http::async_write_header(stream, serializer, use_awaitable);
    std::vector<std::byte> buffer(
        static_cast<size_t>(std::min<uint64_t>(kTransferBuffer, source.size)));
    uint64_t sent = 0;
    while (sent < source.size) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), source.size - sent));
      size_t got = (*source.read)(source.offset + sent, std::span(buffer.data(), want));
      if (got == 0) {
        throw OciError(OciErrorKind::protocol,
                       "blob source ended early at offset " + std::to_string(source.offset + sent));
      }
      msg.body().data = buffer.data();
      msg.body().size = got;
      msg.body().more = sent + got < source.size;
      lowest.expires_after(options.io_timeout);
      auto [ec, written] = co_await http::async_write(stream, serializer, kNoThrow);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw boost::system::system_error(ec);
      sent += got;
      if (source.on_sent) source.on_sent(sent);
      check_stop();
    }
  }

  // Beast sizes each socket read by the buffer's free capacity (at most 64 KiB): without
  // room reserved, a body streams in 512-byte reads.
  beast::flat_buffer buffer;
  buffer.reserve(256 * 1024);
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  if (req.method == http::verb::head) parser.skip(true);
  lowest.expires_after(options.io_timeout);
  co_await http::async_read_header(stream, buffer, parser, use_awaitable);

  Response response;
  response.status = parser.get().result_int();
  response.header = parser.get().base();
  response.url = req.url;
  if (req.header_only) co_return response;

  bool ok = response.status / 100 == 2;
  bool to_sink = sink && ok && (req.sink_status == 0 || req.sink_status == response.status);
  if (to_sink && response.status == 206 && req.expect_range_start) {
    auto range = response.field(http::field::content_range);  // "bytes S-E/T"
    auto start = range.starts_with("bytes ") ? range.substr(6, range.find('-') - 6) : "";
    if (parse_u64(start) != req.expect_range_start) {
      throw OciError(OciErrorKind::protocol, "range answer starts at the wrong byte: asked for " +
                                                 std::to_string(*req.expect_range_start) +
                                                 ", got \"" + range + "\"");
    }
  }
  size_t limit = ok ? options.max_manifest_bytes : kErrorBodyLimit;
  std::vector<std::byte> chunk(to_sink ? kTransferBuffer : 64 * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    lowest.expires_after(options.io_timeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kNoThrow);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) throw boost::system::system_error(ec);
    size_t got = chunk.size() - parser.get().body().size;
    if (to_sink) {
      if (got > 0) (*sink)(std::span<const std::byte>(chunk.data(), got));
    } else {
      if (response.body.size() + got > limit) {
        if (ok) {
          throw OciError(OciErrorKind::protocol, "answer from " + req.url.str() +
                                                     " is larger than " + std::to_string(limit) +
                                                     " bytes");
        }
        break;  // an error page: what we have is enough to explain it
      }
      response.body.append(reinterpret_cast<const char*>(chunk.data()), got);
    }
    check_stop();
  }
  co_return response;
}

awaitable<Response> Transport::exchange(const Request& req, const Sink* sink) {
  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(executor);
  auto endpoints =
      co_await resolver.async_resolve(req.url.host, std::to_string(req.url.port), use_awaitable);
  if (req.url.scheme == "https") {
    beast::ssl_stream<beast::tcp_stream> stream(executor, tls_);
    if (!SSL_set_tlsext_host_name(stream.native_handle(), req.url.host.c_str())) {
      throw OciError(OciErrorKind::transport, "TLS: cannot set server name " + req.url.host);
    }
    stream.set_verify_callback(ssl::host_name_verification(req.url.host));
    beast::get_lowest_layer(stream).expires_after(options.io_timeout);
    co_await beast::get_lowest_layer(stream).async_connect(endpoints, use_awaitable);
    co_await stream.async_handshake(ssl::stream_base::client, use_awaitable);
    co_return co_await exchange_on(stream, req, sink);
  }
  beast::tcp_stream stream(executor);
  stream.expires_after(options.io_timeout);
  co_await stream.async_connect(endpoints, use_awaitable);
  co_return co_await exchange_on(stream, req, sink);
}

// ---- redirects and authentication ----

awaitable<Response> Transport::send(Request req, const Sink* sink) {
  bool authenticated = false;
  const OciUrl first_url = req.url;
  for (unsigned hops = 0;;) {
    bool to_registry = req.origin && req.url.same_origin(*req.origin);
    // Credentials never follow a redirect to another origin: registry ones go only to the
    // registry, the caller's own (token requests) only to where they were first sent.
    if (req.origin || !req.url.same_origin(first_url)) {
      std::erase_if(req.headers,
                    [](const auto& h) { return h.first == http::field::authorization; });
    }
    if (to_registry) {
      if (auto it = authorization_.find(origin_key(req.url)); it != authorization_.end()) {
        req.headers.emplace_back(http::field::authorization, it->second);
      }
    }
    Response response = co_await exchange(req, sink);
    if (response.status == 401 && to_registry) {
      if (authenticated) {
        auto body = trimmed(response.body);
        throw OciError(OciErrorKind::unauthorized, "unauthorized: access denied", 401, body);
      }
      co_await authenticate(response);
      authenticated = true;
      continue;
    }
    if (is_redirect(response.status)) {
      if (++hops > options.max_redirects) {
        throw OciError(OciErrorKind::protocol, "too many redirects from " + req.url.str());
      }
      auto location = response.field(http::field::location);
      if (location.empty()) {
        throw OciError(OciErrorKind::protocol,
                       std::to_string(response.status) + " without Location from " + req.url.str());
      }
      req.url = req.url.resolve(location);
      if (response.status == 303 && req.method != http::verb::head) {
        req.method = http::verb::get;
        req.body.clear();
        req.source.reset();
      }
      continue;
    }
    co_return response;
  }
}

awaitable<void> Transport::authenticate(const Response& challenge_response) {
  auto key = origin_key(challenge_response.url);
  auto challenges = parse_www_authenticate(challenge_response.field(http::field::www_authenticate));
  for (const auto& challenge : challenges) {
    if (challenge.scheme == "bearer") {
      auto realm = challenge.param("realm");
      if (realm.empty()) {
        throw OciError(OciErrorKind::protocol,
                       "Bearer challenge without realm from " + challenge_response.url.str());
      }
      Request token_request;
      token_request.url = OciUrl::parse(realm);
      if (auto service = challenge.param("service"); !service.empty()) {
        token_request.url.add_query("service", service);
      }
      auto scopes = challenge.param("scope");
      for (size_t pos = 0; pos < scopes.size();) {
        auto end = std::min(scopes.find(' ', pos), scopes.size());
        if (end > pos) token_request.url.add_query("scope", scopes.substr(pos, end - pos));
        pos = end + 1;
      }
      if (options.credentials) {
        token_request.headers.emplace_back(
            http::field::authorization,
            "Basic " + base64(options.credentials->username + ":" + options.credentials->password));
      }
      Response answer = co_await send(token_request);
      if (answer.status == 401 || answer.status == 403) {
        auto body = trimmed(answer.body);
        throw OciError(OciErrorKind::unauthorized, "unauthorized: access denied", answer.status,
                       body);
      }
      if (answer.status != 200) {
        auto body = trimmed(answer.body);
        throw OciError(
            OciErrorKind::http,
            "token request to " + realm + ": " + std::to_string(answer.status) + ": " + body,
            answer.status, body);
      }
      auto json = parse_bounded_json_or_discarded(answer.body);
      std::string token;
      if (json.is_object()) {
        for (const char* field : {"token", "access_token"}) {
          if (auto it = json.find(field); it != json.end() && it->is_string()) {
            token = it->get<std::string>();
            if (!token.empty()) break;
          }
        }
      }
      if (token.empty()) {
        throw OciError(OciErrorKind::protocol,
                       "token answer from " + realm + " has no \"token\" or \"access_token\"");
      }
      authorization_[key] = "Bearer " + token;
      co_return;
    }
    if (challenge.scheme == "basic" && options.credentials) {
      authorization_[key] =
          "Basic " + base64(options.credentials->username + ":" + options.credentials->password);
      co_return;
    }
  }
  throw OciError(OciErrorKind::unauthorized, "unauthorized: access denied", 401,
                 trimmed(challenge_response.body));
}

// Retries transport failures and 5xx answers with exponential back-off.
awaitable<Response> Transport::send_with_retry(const Request& req, const Sink* sink) {
  for (unsigned attempt = 1;; ++attempt) {
    std::string failure;
    try {
      Response response = co_await send(req, sink);
      if (response.status < 500) co_return response;
      if (attempt >= options.max_attempts) fail_status(response);
      failure = std::to_string(response.status);
    } catch (const boost::system::system_error& e) {
      // One quick second try for an unreachable registry (a blip), then a clear answer.
      if (is_unreachable(e.code()) && attempt >= 2) {
        throw OciError(OciErrorKind::transport, "cannot reach the registry " + req.url.authority() +
                                                    ": " + e.code().message());
      }
      if (!is_transport_error(e) || attempt >= options.max_attempts) {
        throw OciError(OciErrorKind::transport, req.url.str() + ": " + e.code().message());
      }
      failure = e.code().message();
    }
    check_stop();
    co_await sleep(backoff(attempt));
  }
}

Request Transport::registry_request(http::verb method, const OciRepository& repo,
                                    std::string_view tail) {
  Request req;
  req.method = method;
  req.origin = OciUrl::parse(repo.base_url());
  req.url = *req.origin;
  req.url.target = "/v2/" + repo.path + "/" + std::string(tail);
  return req;
}

}  // namespace vkllm::registry::oci
