// `ollama pull`: fetch a model's manifest and blobs from its registry into the store.
//
// Streams Ollama's progress lines in Ollama's order: "pulling manifest", per blob (layers in
// manifest order, then the config) "pulling <12 hex>" with digest/total/completed, "verifying
// sha256 digest", "writing manifest", "removing unused layers" (only when the replaced
// manifest left blobs unused), "success". Blobs already in the store are not fetched again.
//
// Downloads are resumable: the raw bytes are assembled in the store's partial_dir() as
// <digest file name>.partial (sized up front, written by ranges) with a .parts file holding
// each range's progress, and the catalog records the download; a later pull of any model
// using the blob continues where the last one stopped (after a crash, kill or cancellation).
// Nothing becomes visible in the store until its bytes hash to the digest, and the model only
// appears once every blob is committed, so a failed or cancelled pull leaves no partial model.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>

#include "registry/blob_store.h"
#include "registry/catalog.h"
#include "registry/digest.h"
#include "registry/model_name.h"
#include "registry/oci_client.h"
#include "registry/oci_progress.h"

namespace vkllm::registry {

struct PullOptions {
  bool insecure = false;  // allow plain http (the name's host may also say http://)
  bool prune = true;      // remove blobs the replaced manifest used (false: OLLAMA_NOPRUNE)
  OciClientOptions client;
  std::chrono::milliseconds progress_interval{60};
  std::chrono::milliseconds checkpoint_interval{250};  // how often resume state is saved
  // Blobs are hashed (and compressed, when a sample of their frames says zstd saves enough)
  // while they download. Compressing costs ~250 MB/s of CPU per core, more than a fast wire
  // leaves on small machines; when this is set, such blobs are stored raw and handed to it
  // after the pull succeeds, for a background BlobStore::recompress().
  std::function<void(const Digest&)> compress_later;
};

// Throws OciError for registry failures, worded as Ollama does ("pull model manifest: file
// does not exist", "pull model manifest: 412: <body>"), RegistryError(digest_mismatch,
// "digest mismatch, file must be downloaded again: want sha256:…, got sha256:…") for bytes
// that do not match, RegistryError(invalid_input) for a manifest vkllm cannot use, and
// OciError(cancelled) when `stop` is triggered. Returns the manifest digest.
Digest pull(const ModelName& name, BlobStore& store, Catalog& catalog, const PullOptions& options,
            const TransferStatusFn& progress, std::stop_token stop = {});

// The registry repository a name lives in. Loopback hosts (localhost, 127.x, ::1) and
// `insecure` use plain http; an explicit http:// name without `insecure` is refused with
// Ollama's "insecure protocol http".
OciRepository oci_repository(const ModelName& name, bool insecure);

}  // namespace vkllm::registry
