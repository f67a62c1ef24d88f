// How OciClient talks to a registry: one HTTP exchange per fresh connection (TLS with SNI and
// peer verification, or plain HTTP), redirects, WWW-Authenticate (Bearer token or Basic) with the
// accepted Authorization cached per origin, and retry with exponential back-off. The OCI
// distribution protocol itself (manifests, ranged downloads, uploads) lives in oci_client.cpp;
// this module knows nothing of it. Internal to registry/.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "registry/oci_client.h"
#include "registry/oci_url.h"

namespace vkllm::registry::oci {

namespace http = boost::beast::http;
using boost::asio::awaitable;

// A request body streamed from a BlobReadFn: `size` bytes from `offset`.
struct BodySource {
  const BlobReadFn* read = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  std::function<void(uint64_t sent)> on_sent;
};

// Receives a streamed answer body (see Request::sink_status).
using Sink = std::function<void(std::span<const std::byte>)>;

struct Request {
  http::verb method = http::verb::get;
  OciUrl url;
  std::vector<std::pair<http::field, std::string>> headers;
  std::string body;
  std::optional<BodySource> source;
  // Registry credentials go only to this origin (and none at all when unset).
  std::optional<OciUrl> origin;
  // Stream the body into the sink only for this status (0: any 2xx); others are buffered.
  unsigned sink_status = 0;
  // Return right after the header; the body is not read.
  bool header_only = false;
  // For 206 answers: the first byte the Content-Range must start at.
  std::optional<uint64_t> expect_range_start;
};

struct Response {
  unsigned status = 0;
  http::response_header<> header;
  std::string body;
  OciUrl url;  // the URL that answered (after redirects)

  std::string field(http::field name) const { return std::string(header[name]); }
};

// Throws OciError(http) carrying the answer's status and (trimmed) body.
[[noreturn]] void fail_status(const Response& response);

// A whole decimal number (a Content-Length, a Content-Range bound); nullopt for anything else.
std::optional<uint64_t> parse_u64(std::string_view text);

// False for a cancelled operation (the stop token), which must not be retried.
bool is_transport_error(const boost::system::system_error& e);

class Transport {
 public:
  explicit Transport(OciClientOptions opts);

  OciClientOptions options;

  // Throws OciError(cancelled) once the running call's stop token is triggered.
  void check_stop() const;
  std::chrono::milliseconds backoff(unsigned attempt) const;
  awaitable<void> sleep(std::chrono::milliseconds delay);

  // Runs the tasks to completion on one thread; the first failure (or the stop token) ends
  // them all. The task objects outlive the io_context, so coroutine lambdas may capture.
  void run(std::stop_token token, std::vector<std::function<awaitable<void>()>>& tasks);
  void run_one(std::stop_token token, std::function<awaitable<void>()> task);

  // Sends `req`, following redirects and answering one authentication challenge from the
  // registry; the answer body goes to `sink` when given (see Request::sink_status).
  awaitable<Response> send(Request req, const Sink* sink = nullptr);
  // send(), retrying transport failures and 5xx answers with exponential back-off.
  awaitable<Response> send_with_retry(const Request& req, const Sink* sink = nullptr);
  // A request for /v2/<repo path>/<tail> on the registry, credentials allowed.
  Request registry_request(http::verb method, const OciRepository& repo, std::string_view tail);

 private:
  template <class Stream>
  awaitable<Response> exchange_on(Stream& stream, const Request& req, const Sink* sink);
  awaitable<Response> exchange(const Request& req, const Sink* sink);
  awaitable<void> authenticate(const Response& challenge_response);

  boost::asio::ssl::context tls_{boost::asio::ssl::context::tls_client};
  // "scheme://authority" → Authorization header value that the registry accepted.
  std::map<std::string, std::string> authorization_;
  std::stop_token stop_;
};

}  // namespace vkllm::registry::oci
