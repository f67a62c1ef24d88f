// The one error mapping (server/http/error_reply.h): every kind of failure a request can meet ->
// its status, and that status and message in Ollama's, OpenAI's and Anthropic's error shapes, as
// a whole body and as the end of a stream.
#include "server/http/error_reply.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/sampling/token_constraint.h"
#include "registry/errors.h"
#include "registry/oci_error.h"
#include "server/http/private_paths.h"
#include "server/prompt/prompt.h"

using namespace vkllm;
using http::ErrorShape;
using http::StatusError;
using J = nlohmann::ordered_json;

namespace {

StatusError mapped(const std::exception& e) {
  return http::status_error_of(e);
}

TEST(ErrorReply, EachFailureKindMapsToItsStatus) {
  using registry::ErrorKind;
  using registry::RegistryError;
  EXPECT_EQ(mapped(StatusError(503, "busy")).status(), 503u);
  EXPECT_EQ(mapped(StatusError(499, "request cancelled")).status(), 499u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::invalid_name, "n")).status(), 400u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::invalid_digest, "d")).status(), 400u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::invalid_input, "i")).status(), 400u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::digest_mismatch, "m")).status(), 400u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::not_found, "f")).status(), 404u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::corrupt, "c")).status(), 500u);
  EXPECT_EQ(mapped(RegistryError(ErrorKind::io, "o")).status(), 500u);
  // An upstream registry that answered nonsense is a bad gateway; one that could not be reached
  // or refused is this server's failure to do the job.
  EXPECT_EQ(mapped(registry::OciError(registry::OciErrorKind::protocol, "bad answer")).status(),
            502u);
  EXPECT_EQ(mapped(registry::OciError(registry::OciErrorKind::transport, "no route")).status(),
            500u);
  EXPECT_EQ(mapped(sampling::FormatError("unsupported schema keyword")).status(), 400u);
  EXPECT_EQ(mapped(prompt::TemplateError("template: :1:3: bad")).status(), 500u);
  EXPECT_EQ(mapped(std::runtime_error("device lost")).status(), 500u);
  EXPECT_EQ(mapped(std::runtime_error("device lost")).message(), "device lost");
}

TEST(ErrorReply, MessagesAreWholeAndKeepNoPrivateDirectory) {
  // A client-supplied name may hold a NUL; what() would stop there.
  const std::string with_nul("model 'a\0b' not found", 21);
  EXPECT_EQ(mapped(StatusError(404, with_nul)).message(), with_nul);
  EXPECT_EQ(mapped(registry::RegistryError(registry::ErrorKind::not_found, with_nul)).message(),
            with_nul);
  const auto dir = std::filesystem::temp_directory_path() / "vkllm-error-reply-test-store";
  http::hide_path(dir);
  const std::string file = (dir / "blobs" / "sha256-x").string();
  EXPECT_EQ(mapped(std::runtime_error(file + ": bad header")).message(),
            "blobs/sha256-x: bad header");
  EXPECT_EQ(mapped(StatusError(500, "cannot read " + file)).message(),
            "cannot read blobs/sha256-x");
}

TEST(ErrorReply, EveryShapeAsAWholeBody) {
  const StatusError e(404, "model 'x' not found");
  EXPECT_EQ(http::error_body(ErrorShape::ollama, e), R"({"error":"model 'x' not found"})");
  EXPECT_EQ(http::error_body(ErrorShape::openai, e),
            R"({"error":{"message":"model 'x' not found","type":"not_found_error",)"
            R"("param":null,"code":null}})");
  EXPECT_EQ(
      http::error_body(ErrorShape::anthropic, e),
      R"({"type":"error","error":{"type":"not_found_error","message":"model 'x' not found"}})");
  // A machine-readable code reaches OpenAI's `code`; the other shapes have no such field.
  const StatusError key(401, "bad key", "invalid_api_key");
  EXPECT_EQ(http::error_json(ErrorShape::openai, key)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(http::error_json(ErrorShape::openai, key)["error"]["type"], "invalid_request_error");
  EXPECT_EQ(http::error_body(ErrorShape::ollama, key), R"({"error":"bad key"})");
  EXPECT_EQ(http::error_json(ErrorShape::anthropic, key)["error"]["type"], "authentication_error");
  // Invalid UTF-8 echoed from a request is replaced, never a reason to fail the answer.
  EXPECT_EQ(http::error_body(ErrorShape::ollama, StatusError(400, "bad \xff")),
            "{\"error\":\"bad \xEF\xBF\xBD\"}");
}

TEST(ErrorReply, EveryShapeAsTheEndOfAStream) {
  const StatusError e(500, "boom");
  EXPECT_EQ(http::stream_error(ErrorShape::ollama, e), "{\"error\":\"boom\"}\n");
  EXPECT_EQ(http::stream_error(ErrorShape::openai, e),
            "data: {\"error\":{\"message\":\"boom\",\"type\":\"api_error\",\"param\":null,"
            "\"code\":null}}\n\n");
  EXPECT_EQ(http::stream_error(ErrorShape::anthropic, e),
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
            "\"message\":\"boom\"}}\n\n");
}

TEST(ErrorReply, EachStatusGetsTheTypeEachApiNamesIt) {
  struct Row {
    unsigned status;
    const char* openai;
    const char* anthropic;
  };
  const std::vector<Row> rows = {
      {400, "invalid_request_error", "invalid_request_error"},
      {401, "invalid_request_error", "authentication_error"},
      {403, "api_error", "permission_error"},
      {404, "not_found_error", "not_found_error"},
      {413, "api_error", "request_too_large"},
      {429, "api_error", "rate_limit_error"},
      {500, "api_error", "api_error"},
      {501, "api_error", "api_error"},
      {502, "api_error", "api_error"},
      {503, "api_error", "overloaded_error"},
      {529, "api_error", "overloaded_error"},
  };
  for (const auto& r : rows) {
    const StatusError e(r.status, "m");
    EXPECT_EQ(http::error_json(ErrorShape::openai, e)["error"]["type"], r.openai) << r.status;
    EXPECT_EQ(http::error_json(ErrorShape::anthropic, e)["error"]["type"], r.anthropic) << r.status;
  }
}

TEST(ErrorReply, ThePathSaysWhichShape) {
  EXPECT_EQ(http::error_shape_of("/api/chat"), ErrorShape::ollama);
  EXPECT_EQ(http::error_shape_of("/api/pull"), ErrorShape::ollama);
  EXPECT_EQ(http::error_shape_of("/"), ErrorShape::ollama);
  EXPECT_EQ(http::error_shape_of("/v1/chat/completions"), ErrorShape::openai);
  EXPECT_EQ(http::error_shape_of("/v1/embeddings"), ErrorShape::openai);
  EXPECT_EQ(http::error_shape_of("/v1/rerank"), ErrorShape::openai);
  EXPECT_EQ(http::error_shape_of("/v1/models/llama3"), ErrorShape::openai);
  EXPECT_EQ(http::error_shape_of("/v1/messages"), ErrorShape::anthropic);
  EXPECT_EQ(http::error_shape_of("/v1/messages/count_tokens"), ErrorShape::anthropic);
  EXPECT_EQ(http::error_shape_of("/v1/messagesx"), ErrorShape::openai);
}

}  // namespace
