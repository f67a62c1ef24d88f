// `ollama push`: upload a model's blobs and manifest to its registry.
//
// Progress lines in Ollama's order: "retrieving manifest", per blob (layers in manifest
// order, then the config) "pushing <12 hex>" with digest/total/completed (blobs the registry
// already has report completed == total at once), "pushing manifest", "success". A layer with
// a `from` naming a model on the same registry is mounted from that repository when the
// registry allows it. The manifest is sent with its stored bytes, so its digest does not change.
#pragma once

#include <chrono>
#include <stop_token>

#include "registry/blob_store.h"
#include "registry/catalog.h"
#include "registry/model_name.h"
#include "registry/oci_client.h"
#include "registry/oci_progress.h"

namespace vkllm::registry {

struct PushOptions {
  bool insecure = false;
  OciClientOptions client;
  std::chrono::milliseconds progress_interval{60};
};

// Throws RegistryError(not_found) (after a "couldn't retrieve manifest" line) when the model
// is not installed, OciError for registry failures ("unauthorized: access denied", "<status>:
// <body>") and OciError(cancelled) when `stop` is triggered.
void push(const ModelName& name, const BlobStore& store, const Catalog& catalog,
          const PushOptions& options, const TransferStatusFn& progress, std::stop_token stop = {});

}  // namespace vkllm::registry
