#include "registry/sha256.h"

#include <openssl/evp.h>

#include "registry/errors.h"

namespace vkllm::registry {

struct Sha256::Impl {
  struct CtxDeleter {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx{EVP_MD_CTX_new()};
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx.get(), EVP_sha256(), nullptr) != 1)
    throw RegistryError(ErrorKind::io, "sha256: OpenSSL could not initialise a digest context");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> bytes) {
  if (!bytes.empty()) EVP_DigestUpdate(impl_->ctx.get(), bytes.data(), bytes.size());
}

void Sha256::update(std::string_view text) {
  update(std::as_bytes(std::span(text)));
}

Digest Sha256::finish() {
  unsigned char raw[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(impl_->ctx.get(), raw, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned i = 0; i < length; ++i) {
    hex.push_back(kHex[raw[i] >> 4]);
    hex.push_back(kHex[raw[i] & 15]);
  }
  return Digest::from_hex(hex);
}

}  // namespace vkllm::registry
