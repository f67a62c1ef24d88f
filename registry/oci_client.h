// A client for the OCI distribution / Docker Registry HTTP API v2, as Ollama's registry and
// private registries speak it: manifests, blobs (ranged, parallel, resumable downloads) and
// blob uploads (monolithic or chunked, cross-repository mount), over HTTPS (peer verified
// against the system CA store, SNI) or plain HTTP for loopback/insecure registries.
//
// Authentication follows WWW-Authenticate: Bearer challenges fetch a token from the realm
// (anonymously, or with basic credentials when given), Basic challenges send the credentials.
// Redirects are followed; credentials are sent only to the registry's own origin, so
// pre-signed blob-storage URLs on other hosts receive none. Connection errors, timeouts and
// 5xx answers are retried with exponential back-off.
//
// Every call is blocking and may be stopped with a std::stop_token (throws
// OciError(cancelled)). One OciClient may be used by one thread at a time; use one per thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "registry/oci_error.h"

namespace vkllm::registry {

inline constexpr std::string_view kDockerManifestV2 =
    "application/vnd.docker.distribution.manifest.v2+json";

// Where a repository lives: scheme ("http"/"https"), host[:port], and "namespace/model".
struct OciRepository {
  std::string scheme = "https";
  std::string host;
  std::string path;

  std::string base_url() const { return scheme + "://" + host; }
};

struct OciCredentials {
  std::string username;
  std::string password;
};

struct OciClientOptions {
  // Ollama's registry gates models on the client's Ollama version (see ollama-compat §3.2).
  std::string user_agent = "ollama/0.12.6 (amd64 linux) Go/go1.24.1";
  std::optional<OciCredentials> credentials;
  std::string extra_ca_file;  // PEM file trusted in addition to the system store (tests)

  uint64_t parallel_threshold = uint64_t{64} << 20;  // blobs above are fetched as ranges
  unsigned parallel_parts = 4;                       // ranges in flight at once
  // Larger blobs are cut into more ranges of at most this size, fetched in order, so the bytes
  // complete from the front and a pull can hash them while the rest arrives.
  uint64_t max_part_size = uint64_t{32} << 20;
  uint64_t chunked_upload_threshold = uint64_t{256} << 20;  // above: PATCH chunks
  uint64_t upload_chunk_size = uint64_t{64} << 20;

  unsigned max_attempts = 6;  // per request (per part for downloads)
  std::chrono::milliseconds initial_backoff{250};
  std::chrono::milliseconds max_backoff{8000};
  std::chrono::milliseconds io_timeout{30000};  // no progress for this long = retry
  unsigned max_redirects = 10;
  size_t max_manifest_bytes = size_t{8} << 20;
};

struct OciManifest {
  std::string bytes;         // verbatim
  std::string content_type;  // as the registry labelled it (may be text/plain)
  std::string digest;        // Docker-Content-Digest when sent, else empty
};

// One byte range of a blob; `completed` bytes from `offset` are already in place.
struct BlobPart {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t completed = 0;
};

// Splits a blob into download parts: one part up to options.parallel_threshold, else
// max(parallel_parts, size / max_part_size rounded up) equal parts (the last takes the
// remainder).
std::vector<BlobPart> plan_blob_parts(uint64_t size, const OciClientOptions& options);

// Receives downloaded bytes for absolute blob offset `offset`.
using BlobWriteFn = std::function<void(uint64_t offset, std::span<const std::byte> bytes)>;
// Fills `out` with blob bytes from `offset`; returns how many (short only at the end).
using BlobReadFn = std::function<size_t(uint64_t offset, std::span<std::byte> out)>;
// Bytes transferred so far for the blob (may go down when an upload restarts).
using TransferProgressFn = std::function<void(uint64_t completed)>;

enum class UploadOutcome { uploaded, mounted };

class OciClient {
 public:
  explicit OciClient(OciClientOptions options = {});
  ~OciClient();
  OciClient(const OciClient&) = delete;
  OciClient& operator=(const OciClient&) = delete;

  const OciClientOptions& options() const;

  // GET /v2/<path>/manifests/<reference> (Accept: docker manifest v2). A 404 throws
  // OciError(http, status 404).
  OciManifest get_manifest(const OciRepository& repo, std::string_view reference,
                           std::stop_token stop = {});
  // PUT the manifest bytes under <tag>; returns the registry's Docker-Content-Digest (may be
  // empty when the registry sends none).
  std::string put_manifest(const OciRepository& repo, std::string_view tag, std::string_view bytes,
                           std::string_view media_type, std::stop_token stop = {});

  // HEAD /v2/<path>/blobs/<digest>: its size, or nullopt when the registry lacks it.
  std::optional<uint64_t> blob_size(const OciRepository& repo, std::string_view digest,
                                    std::stop_token stop = {});

  // Downloads the blob's missing bytes, part by part (up to parallel_parts at once, taken in
  // offset order),
  // resuming each part at offset + completed and updating `parts` as bytes arrive. If the
  // server cannot serve ranges, the parts collapse into one from offset 0. Calls `write`
  // and `progress` on the calling thread. The bytes are not verified here (the caller hashes
  // what it assembled).
  void download_blob(const OciRepository& repo, std::string_view digest,
                     std::vector<BlobPart>& parts, const BlobWriteFn& write,
                     const TransferProgressFn& progress, std::stop_token stop = {});

  // Uploads a blob of `size` bytes: POST an upload session (asking to mount it from
  // `mount_from`, "namespace/model" on the same registry, when given), then one PUT, or
  // PATCH chunks and a final PUT for blobs above chunked_upload_threshold.
  UploadOutcome upload_blob(const OciRepository& repo, std::string_view digest, uint64_t size,
                            const BlobReadFn& read, const TransferProgressFn& progress,
                            std::optional<std::string> mount_from = {}, std::stop_token stop = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::registry
