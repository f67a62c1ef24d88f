// OciClient against a real docker-registry on loopback and against small test servers that
// demand tokens, redirect, fail and lie.
#include "registry/oci_client.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <stop_token>

#include "tests/support/docker_registry.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_http_server.h"

namespace vkllm::registry {
namespace {

using test::DockerRegistry;
using test::TestHttpServer;
using test::TestRequest;
using test::TestResponse;

std::string sha256_digest(std::string_view bytes) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

class RandomBytes {
 public:
  RandomBytes() : seed_(std::random_device{}()), rng_(seed_) {}
  std::string make(size_t size) {
    std::string out(size, '\0');
    for (auto& c : out) c = static_cast<char>(rng_());
    return out;
  }
  unsigned seed() const { return seed_; }

 private:
  unsigned seed_;
  std::mt19937 rng_;
};

OciClientOptions fast_options() {
  OciClientOptions options;
  options.initial_backoff = std::chrono::milliseconds(1);
  options.max_backoff = std::chrono::milliseconds(5);
  options.io_timeout = std::chrono::milliseconds(5000);
  return options;
}

BlobReadFn reader_of(const std::string& bytes) {
  return [&bytes](uint64_t offset, std::span<std::byte> out) {
    size_t n = std::min<size_t>(out.size(), bytes.size() - offset);
    std::memcpy(out.data(), bytes.data() + offset, n);
    return n;
  };
}

// Downloads into a string, checking that every byte is written exactly once.
std::string download(OciClient& client, const OciRepository& repo, const std::string& digest,
                     uint64_t size, std::vector<BlobPart>* parts_out = nullptr,
                     std::stop_token stop = {}) {
  std::string out(size, '\0');
  std::vector<bool> written(size, false);
  auto parts = plan_blob_parts(size, client.options());
  if (parts_out && !parts_out->empty()) parts = *parts_out;
  client.download_blob(
      repo, digest, parts,
      [&](uint64_t offset, std::span<const std::byte> bytes) {
        ASSERT_LE(offset + bytes.size(), size);
        for (size_t i = 0; i < bytes.size(); ++i) {
          written[offset + i] = true;
        }
        std::memcpy(out.data() + offset, bytes.data(), bytes.size());
      },
      nullptr, stop);
  if (parts_out) *parts_out = parts;
  return out;
}

TEST(OciClient, PlansPartsAboveTheThreshold) {
  OciClientOptions options;
  options.parallel_threshold = 100;
  options.parallel_parts = 4;
  EXPECT_EQ(plan_blob_parts(100, options).size(), 1u);
  auto parts = plan_blob_parts(1003, options);
  ASSERT_EQ(parts.size(), 4u);
  uint64_t next = 0;
  for (const auto& part : parts) {
    EXPECT_EQ(part.offset, next);
    EXPECT_EQ(part.completed, 0u);
    next += part.size;
  }
  EXPECT_EQ(next, 1003u);
  EXPECT_EQ(parts.back().size, 1003u - 3 * 250);
}

TEST(OciClient, UploadsAndDownloadsThroughDockerRegistry) {
  DockerRegistry registry;
  RandomBytes random;
  SCOPED_TRACE("seed " + std::to_string(random.seed()));
  auto options = fast_options();
  options.parallel_threshold = 1 << 20;
  options.parallel_parts = 3;
  OciClient client(options);
  OciRepository repo{"http", registry.host(), "ns/model"};

  std::string blob = random.make((3 << 20) + 12345);
  std::string digest = sha256_digest(blob);
  EXPECT_EQ(client.blob_size(repo, digest), std::nullopt);
  uint64_t last_progress = 0;
  auto outcome = client.upload_blob(repo, digest, blob.size(), reader_of(blob),
                                    [&](uint64_t done) { last_progress = done; });
  EXPECT_EQ(outcome, UploadOutcome::uploaded);
  EXPECT_EQ(last_progress, blob.size());
  EXPECT_EQ(client.blob_size(repo, digest), blob.size());

  std::string config = R"({"model_format":"gguf","architecture":"amd64","os":"linux"})";
  std::string config_digest = sha256_digest(config);
  client.upload_blob(repo, config_digest, config.size(), reader_of(config), nullptr);
  std::string manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
      R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":")" +
      config_digest + R"(","size":)" + std::to_string(config.size()) +
      R"(},"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":")" + digest +
      R"(","size":)" + std::to_string(blob.size()) + "}]}";
  EXPECT_EQ(client.put_manifest(repo, "v1", manifest, kDockerManifestV2), sha256_digest(manifest));

  auto fetched = client.get_manifest(repo, "v1");
  EXPECT_EQ(fetched.bytes, manifest);
  EXPECT_EQ(fetched.digest, sha256_digest(manifest));
  EXPECT_EQ(fetched.content_type, kDockerManifestV2);

  std::vector<BlobPart> parts;
  EXPECT_EQ(download(client, repo, digest, blob.size(), &parts), blob);
  ASSERT_EQ(parts.size(), 3u);  // really fetched as ranges
  for (const auto& part : parts) EXPECT_EQ(part.completed, part.size);

  // A resumed download fetches only what is missing.
  parts[1].completed = parts[1].size / 2;
  std::string resumed(blob.size(), '\0');
  uint64_t bytes_written = 0;
  client.download_blob(
      repo, digest, parts,
      [&](uint64_t offset, std::span<const std::byte> bytes) {
        std::memcpy(resumed.data() + offset, bytes.data(), bytes.size());
        bytes_written += bytes.size();
      },
      nullptr);
  EXPECT_EQ(bytes_written, parts[1].size - parts[1].size / 2);
  EXPECT_EQ(resumed.substr(parts[1].offset + parts[1].size / 2, bytes_written),
            blob.substr(parts[1].offset + parts[1].size / 2, bytes_written));

  try {
    client.get_manifest(repo, "missing");
    FAIL() << "no error for a missing tag";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::http);
    EXPECT_EQ(e.status(), 404u);
  }
}

TEST(OciClient, UploadsLargeBlobsInChunksAndMountsAcrossRepositories) {
  DockerRegistry registry;
  RandomBytes random;
  SCOPED_TRACE("seed " + std::to_string(random.seed()));
  auto options = fast_options();
  options.chunked_upload_threshold = 1 << 20;
  options.upload_chunk_size = 700 * 1024;
  OciClient client(options);
  OciRepository repo{"http", registry.host(), "ns/chunked"};
  std::string blob = random.make((5 << 19) + 7);
  std::string digest = sha256_digest(blob);
  std::vector<uint64_t> progress;
  EXPECT_EQ(client.upload_blob(repo, digest, blob.size(), reader_of(blob),
                               [&](uint64_t done) { progress.push_back(done); }),
            UploadOutcome::uploaded);
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), blob.size());
  EXPECT_EQ(download(client, repo, digest, blob.size()), blob);

  OciRepository other{"http", registry.host(), "other/copy"};
  EXPECT_EQ(client.upload_blob(other, digest, blob.size(), reader_of(blob), nullptr, "ns/chunked"),
            UploadOutcome::mounted);
  EXPECT_EQ(client.blob_size(other, digest), blob.size());
}

// A registry that wants "Authorization: Bearer <token>", and its token endpoint.
struct TokenRegistry {
  std::string blob;
  std::string token = "secret-token-1";
  std::atomic<unsigned> token_requests{0};
  std::atomic<unsigned> rejected{0};
  std::string last_token_query;
  std::string last_token_authorization;
  bool issue_wrong_token = false;
  std::string redirect_to;  // blob GETs answer 307 here when set
  TestHttpServer server{[this](const TestRequest& req) { return handle(req); }};

  TestResponse handle(const TestRequest& req) {
    if (req.target.starts_with("/token")) {
      ++token_requests;
      last_token_query = req.target.substr(req.target.find('?') + 1);
      last_token_authorization = req.header("authorization");
      return {200,
              {{"Content-Type", "application/json"}},
              R"({"token":")" + (issue_wrong_token ? std::string("nope") : token) + "\"}"};
    }
    if (req.header("authorization") != "Bearer " + token) {
      ++rejected;
      return {401,
              {{"WWW-Authenticate", "Bearer realm=\"" + server.url("/token") +
                                        "\",service=\"test-registry\",scope=\"repository:ns/m:pull "
                                        "repository:ns/other:pull\""}},
              R"({"errors":[{"code":"UNAUTHORIZED"}]})"};
    }
    if (req.target == "/v2/ns/m/manifests/latest") {
      return {
          200, {{"Content-Type", "application/vnd.docker.distribution.manifest.v2+json"}}, "{}"};
    }
    if (req.target.starts_with("/v2/ns/m/blobs/")) {
      if (!redirect_to.empty()) return {307, {{"Location", redirect_to}}, ""};
      return test::serve_bytes(req, blob);
    }
    return {404, {}, "not here"};
  }
};

TEST(OciClient, FetchesABearerTokenFromTheChallengeAndReusesIt) {
  TokenRegistry registry;
  registry.blob = "tiny blob";
  auto options = fast_options();
  options.credentials = OciCredentials{"alice", "pw"};
  OciClient client(options);
  OciRepository repo{"http", registry.server.host(), "ns/m"};
  EXPECT_EQ(client.get_manifest(repo, "latest").bytes, "{}");
  EXPECT_EQ(registry.token_requests, 1u);
  EXPECT_EQ(registry.last_token_query,
            "service=test-registry&scope=repository%3Ans%2Fm%3Apull&scope=repository%3Ans%2Fother%"
            "3Apull");
  EXPECT_EQ(registry.last_token_authorization, "Basic YWxpY2U6cHc=");  // alice:pw
  EXPECT_EQ(client.blob_size(repo, sha256_digest(registry.blob)), registry.blob.size());
  EXPECT_EQ(registry.token_requests, 1u);  // the token was reused
  EXPECT_EQ(registry.rejected, 1u);
}

TEST(OciClient, RefusedTokenIsUnauthorized) {
  TokenRegistry registry;
  registry.issue_wrong_token = true;
  OciClient client(fast_options());
  try {
    client.get_manifest({"http", registry.server.host(), "ns/m"}, "latest");
    FAIL() << "a token the registry refuses was accepted";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::unauthorized);
    EXPECT_EQ(std::string(e.what()), "unauthorized: access denied");
  }
  EXPECT_EQ(registry.token_requests, 1u);  // one retry with a token, not a loop
}

TEST(OciClient, FollowsRedirectsToStorageWithoutSendingCredentials) {
  RandomBytes random;
  SCOPED_TRACE("seed " + std::to_string(random.seed()));
  std::string blob = random.make(600 * 1024 + 3);
  std::atomic<unsigned> storage_requests{0}, with_authorization{0}, ranged{0};
  TestHttpServer storage([&](const TestRequest& req) {
    ++storage_requests;
    if (!req.header("authorization").empty()) ++with_authorization;
    if (!req.header("range").empty()) ++ranged;
    if (req.target != "/bucket/blob?sig=abc") return TestResponse{403, {}, "bad signature"};
    return test::serve_bytes(req, blob);
  });
  TokenRegistry registry;
  registry.redirect_to = storage.url("/bucket/blob?sig=abc");
  auto options = fast_options();
  options.parallel_threshold = 100 * 1024;
  options.parallel_parts = 4;
  OciClient client(options);
  OciRepository repo{"http", registry.server.host(), "ns/m"};
  std::vector<BlobPart> parts;
  EXPECT_EQ(download(client, repo, sha256_digest(blob), blob.size(), &parts), blob);
  EXPECT_EQ(parts.size(), 4u);
  EXPECT_EQ(registry.token_requests, 1u);  // the registry itself did demand a token
  EXPECT_GE(storage_requests, 5u);         // probe + 4 ranges
  EXPECT_EQ(ranged, storage_requests.load());
  EXPECT_EQ(with_authorization, 0u);
}

TEST(OciClient, RetriesServerErrorsAndBrokenConnections) {
  RandomBytes random;
  SCOPED_TRACE("seed " + std::to_string(random.seed()));
  std::string blob = random.make(300 * 1024);
  std::atomic<unsigned> manifest_requests{0}, blob_requests{0};
  TestHttpServer server([&](const TestRequest& req) -> TestResponse {
    if (req.target.find("/manifests/") != std::string::npos) {
      if (++manifest_requests <= 2) return {500, {}, "try again"};
      return {200, {}, "{\"ok\":1}"};
    }
    unsigned n = ++blob_requests;
    if (n == 1) return {503, {}, "busy"};
    auto res = test::serve_bytes(req, blob);
    if (n == 2) res.send_only = res.body.size() / 3;  // connection drops mid-body
    return res;
  });
  OciClient client(fast_options());
  OciRepository repo{"http", server.host(), "ns/m"};
  EXPECT_EQ(client.get_manifest(repo, "t").bytes, "{\"ok\":1}");
  EXPECT_EQ(manifest_requests, 3u);
  EXPECT_EQ(download(client, repo, sha256_digest(blob), blob.size()), blob);
  EXPECT_EQ(blob_requests, 3u);  // 503, a third of the body, then the rest as a range
}

TEST(OciClient, GivesUpAfterMaxAttemptsWithTheStatus) {
  std::atomic<unsigned> requests{0};
  TestHttpServer server([&](const TestRequest&) {
    ++requests;
    return TestResponse{502, {}, "bad gateway\n"};
  });
  auto options = fast_options();
  options.max_attempts = 3;
  OciClient client(options);
  try {
    client.get_manifest({"http", server.host(), "ns/m"}, "t");
    FAIL() << "no error";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::http);
    EXPECT_EQ(e.status(), 502u);
    EXPECT_EQ(std::string(e.what()), "502: bad gateway");
  }
  EXPECT_EQ(requests, 3u);
}

TEST(OciClient, ConnectionRefusedIsATransportError) {
  uint16_t port;
  {
    TestHttpServer closed([](const TestRequest&) { return TestResponse{}; });
    port = closed.port();
  }
  auto options = fast_options();
  options.max_attempts = 2;
  OciClient client(options);
  try {
    client.get_manifest({"http", "127.0.0.1:" + std::to_string(port), "ns/m"}, "t");
    FAIL() << "no error";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::transport);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1"), std::string::npos) << e.what();
  }
}

TEST(OciClient, UnreachableRegistryFailsFastNamingTheHost) {
  uint16_t port;
  {
    TestHttpServer closed([](const TestRequest&) { return TestResponse{}; });
    port = closed.port();
  }
  // Default retry settings: six attempts with back-off used to take ~8 s before failing.
  OciClient client{OciClientOptions{}};
  for (const std::string& host :
       {"127.0.0.1:" + std::to_string(port), std::string("registry.invalid")}) {
    const auto start = std::chrono::steady_clock::now();
    try {
      client.get_manifest({"http", host, "library/m"}, "latest");
      FAIL() << "no error for " << host;
    } catch (const OciError& e) {
      EXPECT_EQ(e.kind(), OciErrorKind::transport);
      EXPECT_EQ(std::string(e.what()).rfind("cannot reach the registry " + host, 0), 0u)
          << e.what();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.5) << host;
  }
}

TEST(OciClient, BlobShorterThanItsManifestIsASizeMismatch) {
  const std::string blob(1000, 'g');
  std::atomic<unsigned> requests{0};
  TestHttpServer server([&](const TestRequest& req) {
    ++requests;
    const auto range = req.header("range");
    if (range.starts_with("bytes=") && std::stoull(range.substr(6)) >= blob.size()) {
      return TestResponse{416, {}, "range not satisfiable"};
    }
    return test::serve_bytes(req, blob);
  });
  for (uint64_t claimed : {uint64_t{1500}, uint64_t{300 * 1024}}) {  // one stream, then ranges
    requests = 0;
    auto options = fast_options();
    options.parallel_threshold = 100 * 1024;
    OciClient ranged(options);
    try {
      download(ranged, {"http", server.host(), "ns/m"}, sha256_digest(blob), claimed);
      FAIL() << "no error";
    } catch (const OciError& e) {
      EXPECT_EQ(e.kind(), OciErrorKind::protocol);
      EXPECT_NE(std::string(e.what()).find("size mismatch"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(claimed)), std::string::npos) << e.what();
    }
    EXPECT_LE(requests, 5u) << "retried a blob that cannot get longer";
  }
}

TEST(OciClient, FallsBackToOneStreamWhenRangesAreIgnored) {
  RandomBytes random;
  SCOPED_TRACE("seed " + std::to_string(random.seed()));
  std::string blob = random.make(200 * 1024);
  TestHttpServer server([&](const TestRequest& req) {
    TestRequest no_range = req;
    no_range.headers.erase("range");
    return test::serve_bytes(no_range, blob);
  });
  auto options = fast_options();
  options.parallel_threshold = 50 * 1024;
  OciClient client(options);
  std::vector<BlobPart> parts;
  EXPECT_EQ(
      download(client, {"http", server.host(), "ns/m"}, sha256_digest(blob), blob.size(), &parts),
      blob);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].completed, blob.size());
}

TEST(OciClient, RefusesARangeAnswerForTheWrongBytes) {
  std::string blob(100 * 1024, 'x');
  TestHttpServer server([&](const TestRequest& req) {
    auto res = test::serve_bytes(req, blob);
    for (auto& [name, value] : res.headers) {
      if (name == "Content-Range" && !value.starts_with("bytes 0-")) value = "bytes 7-99/102400";
    }
    return res;
  });
  auto options = fast_options();
  options.parallel_threshold = 10 * 1024;
  OciClient client(options);
  try {
    download(client, {"http", server.host(), "ns/m"}, sha256_digest(blob), blob.size());
    FAIL() << "no error";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::protocol);
    EXPECT_NE(std::string(e.what()).find("wrong byte"), std::string::npos) << e.what();
  }
}

TEST(OciClient, StopTokenCancelsADownload) {
  std::string blob(16 << 20, 'z');
  TestHttpServer server([&](const TestRequest& req) { return test::serve_bytes(req, blob); });
  OciClient client(fast_options());
  std::stop_source stop;
  std::vector<BlobPart> parts{{0, blob.size(), 0}};
  try {
    client.download_blob(
        {"http", server.host(), "ns/m"}, sha256_digest(blob), parts,
        [](uint64_t, std::span<const std::byte>) {}, [&](uint64_t) { stop.request_stop(); },
        stop.get_token());
    FAIL() << "not cancelled";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::cancelled);
  }
  EXPECT_LT(parts[0].completed, blob.size());

  std::stop_source already;
  already.request_stop();
  EXPECT_THROW(client.get_manifest({"http", server.host(), "ns/m"}, "t", already.get_token()),
               OciError);
}

// A self-signed certificate (made with the openssl tool) for the given subjectAltName.
struct SelfSignedCertificate {
  test::TempDir dir{"vkllm-tls"};
  std::string cert = (dir.path() / "cert.pem").string();
  std::string key = (dir.path() / "key.pem").string();

  explicit SelfSignedCertificate(const std::string& subject_alt_name) {
    std::string command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=vkllm-test -addext subjectAltName=" +
        subject_alt_name + " -keyout '" + key + "' -out '" + cert + "' >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) throw std::runtime_error("openssl req failed");
  }
};

TEST(OciClient, SpeaksHttpsWithSniAndVerifiesThePeer) {
  SelfSignedCertificate certificate("DNS:localhost");
  boost::asio::ssl::context tls(boost::asio::ssl::context::tls_server);
  tls.use_certificate_chain_file(certificate.cert);
  tls.use_private_key_file(certificate.key, boost::asio::ssl::context::pem);
  TestHttpServer server(
      [](const TestRequest&) {
        return TestResponse{200, {}, "{\"tls\":1}"};
      },
      &tls);
  std::string port = std::to_string(server.port());

  auto options = fast_options();
  options.max_attempts = 2;
  options.extra_ca_file = certificate.cert;
  OciClient trusting(options);
  EXPECT_EQ(trusting.get_manifest({"https", "localhost:" + port, "ns/m"}, "t").bytes,
            "{\"tls\":1}");
  EXPECT_EQ(server.last_server_name(), "localhost");

  // The certificate is trusted but names another host.
  try {
    trusting.get_manifest({"https", "127.0.0.1:" + port, "ns/m"}, "t");
    FAIL() << "a certificate for another host was accepted";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::transport);
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos)
        << e.what();
  }

  // Only the system CA store: a self-signed certificate is refused.
  options.extra_ca_file.clear();
  OciClient strict(options);
  try {
    strict.get_manifest({"https", "localhost:" + port, "ns/m"}, "t");
    FAIL() << "an untrusted certificate was accepted";
  } catch (const OciError& e) {
    EXPECT_EQ(e.kind(), OciErrorKind::transport);
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vkllm::registry
