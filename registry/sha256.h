// Incremental sha256 (OpenSSL EVP) for hashing blobs as they stream through.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "registry/digest.h"

namespace vkllm::registry {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(std::span<const std::byte> bytes);
  void update(std::string_view text);
  // Finishes the hash; the object must not be updated afterwards.
  Digest finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkllm::registry
