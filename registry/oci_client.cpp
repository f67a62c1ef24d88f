#include "registry/oci_client.h"

#include <algorithm>
#include <boost/system/system_error.hpp>

#include "registry/oci_transport.h"

namespace vkllm::registry {
namespace {

using oci::awaitable;
using oci::BodySource;
using oci::fail_status;
using oci::is_transport_error;
using oci::parse_u64;
using oci::Request;
using oci::Response;
using oci::Sink;
namespace http = oci::http;

}  // namespace

std::vector<BlobPart> plan_blob_parts(uint64_t size, const OciClientOptions& options) {
  unsigned count = std::max(1u, options.parallel_parts);
  if (size <= options.parallel_threshold || count == 1 || size < count) {
    return {BlobPart{0, size, 0}};
  }
  if (options.max_part_size > 0) {
    const uint64_t by_size = (size + options.max_part_size - 1) / options.max_part_size;
    count = static_cast<unsigned>(std::max<uint64_t>(count, std::min<uint64_t>(by_size, 1u << 16)));
  }
  std::vector<BlobPart> parts;
  uint64_t part_size = size / count;
  for (unsigned i = 0; i < count; ++i) {
    uint64_t offset = part_size * i;
    parts.push_back({offset, i + 1 == count ? size - offset : part_size, 0});
  }
  return parts;
}

struct OciClient::Impl : oci::Transport {
  using Transport::Transport;

  // ---- downloads ----

  // A registry whose blob is shorter than the manifest says: retrying cannot help.
  [[noreturn]] static void short_blob(std::string_view digest, uint64_t got, uint64_t want) {
    throw OciError(OciErrorKind::protocol,
                   "size mismatch: the registry sent " + std::to_string(got) + " bytes of blob " +
                       std::string(digest) + ", its manifest says " + std::to_string(want));
  }

  awaitable<void> download_part(Request base, BlobPart& part, bool whole, const BlobWriteFn& write,
                                const std::function<void()>& on_bytes, std::string_view digest,
                                uint64_t blob_size) {
    unsigned attempt = 1;
    while (part.completed < part.size || (whole && part.size == 0)) {
      Request req = base;
      uint64_t start = part.offset + part.completed;
      if (whole && part.completed == 0) {
        req.sink_status = 200;
      } else {
        req.sink_status = 206;
        req.expect_range_start = start;
        req.headers.emplace_back(
            http::field::range,
            "bytes=" + std::to_string(start) + "-" + std::to_string(part.offset + part.size - 1));
      }
      uint64_t before = part.completed;
      Sink sink = [&](std::span<const std::byte> bytes) {
        if (part.completed + bytes.size() > part.size) {
          throw OciError(OciErrorKind::protocol,
                         "server sent more than the " + std::to_string(part.size) +
                             " bytes asked for at offset " + std::to_string(part.offset));
        }
        write(part.offset + part.completed, bytes);
        part.completed += bytes.size();
        on_bytes();
      };
      std::string failure;
      try {
        Response response = co_await send(req, &sink);
        if (response.status == req.sink_status) {
          if (part.completed == part.size) co_return;
          // The answer was complete (a cut connection throws): the blob itself is short.
          short_blob(digest, part.offset + part.completed, blob_size);
        } else if (response.status == 416) {  // nothing at our offset: shorter than the manifest
          short_blob(digest, start, blob_size);
        } else if (response.status >= 500) {
          failure = std::to_string(response.status);
        } else {
          fail_status(response);
        }
      } catch (const boost::system::system_error& e) {
        if (!is_transport_error(e)) throw;
        failure = e.code().message();
      }
      if (part.completed > before) attempt = 1;  // progress: a fresh set of retries
      if (attempt >= options.max_attempts) {
        throw OciError(OciErrorKind::transport, "downloading " + base.url.str() + ": " + failure);
      }
      check_stop();
      co_await sleep(backoff(attempt++));
    }
  }
};

OciClient::OciClient(OciClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
OciClient::~OciClient() = default;

const OciClientOptions& OciClient::options() const {
  return impl_->options;
}

OciManifest OciClient::get_manifest(const OciRepository& repo, std::string_view reference,
                                    std::stop_token stop) {
  Request req =
      impl_->registry_request(http::verb::get, repo, "manifests/" + std::string(reference));
  req.headers.emplace_back(http::field::accept, std::string(kDockerManifestV2));
  OciManifest manifest;
  impl_->run_one(stop, [&]() -> awaitable<void> {
    Response response = co_await impl_->send_with_retry(req);
    if (response.status != 200) fail_status(response);
    manifest.bytes = std::move(response.body);
    manifest.content_type = response.field(http::field::content_type);
    manifest.digest = std::string(response.header["Docker-Content-Digest"]);
  });
  return manifest;
}

std::string OciClient::put_manifest(const OciRepository& repo, std::string_view tag,
                                    std::string_view bytes, std::string_view media_type,
                                    std::stop_token stop) {
  Request req = impl_->registry_request(http::verb::put, repo, "manifests/" + std::string(tag));
  req.headers.emplace_back(http::field::content_type, std::string(media_type));
  req.body = std::string(bytes);
  std::string digest;
  impl_->run_one(stop, [&]() -> awaitable<void> {
    Response response = co_await impl_->send_with_retry(req);
    if (response.status / 100 != 2) fail_status(response);
    digest = std::string(response.header["Docker-Content-Digest"]);
  });
  return digest;
}

std::optional<uint64_t> OciClient::blob_size(const OciRepository& repo, std::string_view digest,
                                             std::stop_token stop) {
  Request req = impl_->registry_request(http::verb::head, repo, "blobs/" + std::string(digest));
  std::optional<uint64_t> size;
  impl_->run_one(stop, [&]() -> awaitable<void> {
    Response response = co_await impl_->send_with_retry(req);
    if (response.status == 404) co_return;
    if (response.status != 200) fail_status(response);
    size = parse_u64(response.field(http::field::content_length));
    if (!size) {
      throw OciError(OciErrorKind::protocol,
                     "HEAD " + response.url.str() + " answered without a valid Content-Length");
    }
  });
  return size;
}

void OciClient::download_blob(const OciRepository& repo, std::string_view digest,
                              std::vector<BlobPart>& parts, const BlobWriteFn& write,
                              const TransferProgressFn& progress, std::stop_token stop) {
  if (parts.empty()) return;
  Request base = impl_->registry_request(http::verb::get, repo, "blobs/" + std::string(digest));
  uint64_t total = 0;
  for (const auto& part : parts) total += part.size;
  bool whole = parts.size() == 1 && parts[0].offset == 0 && parts[0].completed == 0;

  if (!whole) {
    // Find where the bytes really are (following redirects once, e.g. to pre-signed storage
    // URLs) and whether that server honours Range; only the header is read.
    Request probe = base;
    probe.header_only = true;
    probe.headers.emplace_back(http::field::range, "bytes=0-0");
    impl_->run_one(stop, [&]() -> awaitable<void> {
      Response response = co_await impl_->send_with_retry(probe);
      if (response.status == 200) {
        parts = {BlobPart{0, total, 0}};
        whole = true;
      } else if (response.status != 206) {
        fail_status(response);
      }
      base.url = response.url;
    });
  }

  auto completed = [&] {
    uint64_t sum = 0;
    for (const auto& part : parts) sum += part.completed;
    return sum;
  };
  std::function<void()> on_bytes = [&] {
    if (progress) progress(completed());
  };
  // parallel_parts workers take the unfinished parts in offset order (one thread, so the shared
  // index needs no lock).
  std::vector<BlobPart*> todo;
  for (auto& part : parts) {
    if (part.completed >= part.size && !(whole && part.size == 0)) continue;
    todo.push_back(&part);
  }
  size_t next = 0;
  std::vector<std::function<awaitable<void>()>> tasks;
  const size_t workers = std::min<size_t>(todo.size(), std::max(1u, impl_->options.parallel_parts));
  for (size_t w = 0; w < workers; ++w) {
    tasks.push_back([&]() -> awaitable<void> {
      while (next < todo.size()) {
        BlobPart* part = todo[next++];
        co_await impl_->download_part(base, *part, whole, write, on_bytes, digest, total);
      }
    });
  }
  impl_->run(stop, tasks);
}

UploadOutcome OciClient::upload_blob(const OciRepository& repo, std::string_view digest,
                                     uint64_t size, const BlobReadFn& read,
                                     const TransferProgressFn& progress,
                                     std::optional<std::string> mount_from, std::stop_token stop) {
  auto& impl = *impl_;
  UploadOutcome outcome = UploadOutcome::uploaded;
  std::string digest_text(digest);

  auto upload_once = [&]() -> awaitable<bool> {
    Request start = impl.registry_request(http::verb::post, repo, "blobs/uploads/");
    if (mount_from) {
      start.url.add_query("mount", digest_text);
      start.url.add_query("from", *mount_from);
    }
    Response started = co_await impl.send(start);
    if (started.status == 201 && mount_from) {
      outcome = UploadOutcome::mounted;
      co_return true;
    }
    if (started.status != 202) fail_status(started);

    auto next_location = [&](const Response& response) {
      auto location = std::string(response.header["Docker-Upload-Location"]);
      if (location.empty()) location = response.field(http::field::location);
      if (location.empty()) {
        throw OciError(OciErrorKind::protocol,
                       "upload answer without Location from " + response.url.str());
      }
      return response.url.resolve(location);
    };
    OciUrl location = next_location(started);
    auto body_request = [&](http::verb method, uint64_t offset, uint64_t length) {
      Request req;
      req.method = method;
      req.origin = start.origin;
      req.url = location;
      req.headers.emplace_back(http::field::content_type, "application/octet-stream");
      if (length > 0) {
        req.source = BodySource{&read, offset, length, [&, offset](uint64_t sent) {
                                  if (progress) progress(offset + sent);
                                }};
      }
      return req;
    };

    if (size <= impl.options.chunked_upload_threshold) {
      Request put = body_request(http::verb::put, 0, size);
      put.url.add_query("digest", digest_text);
      Response done = co_await impl.send(put);
      if (done.status != 201 && done.status != 204) fail_status(done);
      co_return true;
    }
    uint64_t chunk = std::max<uint64_t>(1, impl.options.upload_chunk_size);
    for (uint64_t offset = 0; offset < size; offset += chunk) {
      uint64_t length = std::min(chunk, size - offset);
      Request patch = body_request(http::verb::patch, offset, length);
      patch.headers.emplace_back(
          http::field::content_range,
          std::to_string(offset) + "-" + std::to_string(offset + length - 1));
      Response accepted = co_await impl.send(patch);
      if (accepted.status != 202 && accepted.status != 204) fail_status(accepted);
      location = next_location(accepted);
    }
    Request put = body_request(http::verb::put, 0, 0);
    put.url.add_query("digest", digest_text);
    Response done = co_await impl.send(put);
    if (done.status != 201 && done.status != 204) fail_status(done);
    co_return true;
  };

  impl.run_one(stop, [&]() -> awaitable<void> {
    for (unsigned attempt = 1;; ++attempt) {
      std::string failure;
      try {
        co_await upload_once();
        co_return;
      } catch (const OciError& e) {
        if (e.kind() != OciErrorKind::http || e.status() < 500 ||
            attempt >= impl.options.max_attempts) {
          throw;
        }
        failure = e.what();
      } catch (const boost::system::system_error& e) {
        if (!is_transport_error(e) || attempt >= impl.options.max_attempts) {
          throw OciError(OciErrorKind::transport,
                         "uploading " + digest_text + ": " + e.code().message());
        }
        failure = e.code().message();
      }
      if (progress) progress(0);
      impl.check_stop();
      co_await impl.sleep(impl.backoff(attempt));
    }
  });
  return outcome;
}

}  // namespace vkllm::registry
