#include "server/http/request_head.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace vkllm::http {

namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

beast::string_view trim_ows(beast::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

void limit_request_parser(RequestParser& parser, size_t header_bytes) {
  parser.header_limit(static_cast<uint32_t>(std::min(header_bytes, kHeaderLimitMax)));
  parser.body_limit(boost::none);
}

std::string framing_problem(const RequestParser& parser) {
  const auto& req = parser.get();
  const auto te = req.equal_range(bhttp::field::transfer_encoding);
  if (te.first != te.second && (std::next(te.first) != te.second ||
                                !beast::iequals(trim_ows(te.first->value()), "chunked"))) {
    return "unsupported Transfer-Encoding";
  }
  const size_t hosts = req.count(bhttp::field::host);
  if (hosts > 1) return "more than one Host header";
  if (hosts == 0 && req.version() >= 11) return "missing Host header";
  return {};
}

}  // namespace vkllm::http
