// Reading a request head safely. Beast throws (instead of reporting an error) for a header or
// trailer field over 64 KiB, and takes a Transfer-Encoding it does not know for "no body"; the
// limits and checks here keep both from reaching a connection.
#pragma once

#include <cstddef>
#include <string>

#include <boost/beast/http.hpp>

namespace vkllm::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::buffer_body>;

// The connection's read buffer (headers, trailers, pipelined bytes): under Beast's per-field
// ceiling plus framing, so no single field can reach it; the parser reports buffer_overflow.
inline constexpr size_t kReadBufferLimit = 64 * 1024;
// The most a request head may take, whatever is configured.
inline constexpr size_t kHeaderLimitMax = 60 * 1024;

// Header limit min(header_bytes, kHeaderLimitMax); body size unchecked (the Exchange does it).
void limit_request_parser(RequestParser& parser, size_t header_bytes);

// Why a parsed head cannot be trusted, or "" when it can (RFC 9112 §6.1, §3.2): a
// Transfer-Encoding other than exactly "chunked" (we know no other coding, and Beast would read
// the body as the next request), and on HTTP/1.1 a missing or repeated Host.
std::string framing_problem(const RequestParser& parser);

}  // namespace vkllm::http
