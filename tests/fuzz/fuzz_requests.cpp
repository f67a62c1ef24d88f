// Request parsing of every inference route on arbitrary bodies: the first byte picks the route
// ('0' /api/generate, '1' /api/chat, '2' /v1/chat/completions, '3' /v1/completions,
// '4' /v1/responses), the rest is the body. Bad input may fail only with http::StatusError (the
// routes turn it into a 400/404 in each API's shape); anything else escaping is a bug. What a
// parser accepts must be usable downstream: its options, format and tools serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/api/inference_request.h"
#include "server/api/json_request.h"
#include "server/api/openai_request.h"
#include "server/http/exchange.h"

using namespace vkllm;

namespace {

size_t touch(const requests::GenerationRequest& r) {
  size_t n = r.options.dump().size() + r.format.dump().size() + r.chat.tools.dump().size();
  for (const auto& m : r.chat.messages) {
    n += m.role.size() + m.content.size() + m.images.size();
    for (const auto& c : m.tool_calls) n += c.arguments.dump().size();
  }
  if (r.constraint) n += r.constraint->cache_key().size();
  n += r.tool_choice.name.size();
  return n + r.generate.prompt.size() + r.name.display().size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char route = static_cast<char>(data[0]);
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    requests::GenerationRequest r;
    switch (route) {
      case '0':
        r = api::parse_generate_request(api::parse_json_object(body)).request;
        break;
      case '1':
        r = api::parse_chat_request(api::parse_json_object(body)).request;
        break;
      case '2':
        r = api::parse_chat_completion_request(api::parse_openai_body(body)).request;
        break;
      case '3':
        r = api::parse_completion_request(api::parse_openai_body(body)).request;
        break;
      case '4':
        r = api::parse_responses_request(api::parse_openai_body(body)).request;
        break;
      default:
        return 0;
    }
    volatile size_t sink = touch(r);
    (void)sink;
  } catch (const http::StatusError& e) {
    if (e.status() != 400 && e.status() != 404) __builtin_trap();
  }
  return 0;
}
