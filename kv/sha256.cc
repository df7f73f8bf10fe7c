#include "kv/sha256.h"

#include <openssl/evp.h>

#include "kv/error.h"

namespace kv {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (impl_->ctx == nullptr || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
    throw Error(Errc::internal, "SHA-256: cannot start a digest");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::add(const char* data, std::size_t size) { EVP_DigestUpdate(impl_->ctx, data, size); }

std::array<unsigned char, 32> Sha256::finish() {
  std::array<unsigned char, 32> out{};
  unsigned char raw[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(impl_->ctx, raw, &size);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = raw[i];
  return out;
}

std::string hex_of(const std::array<unsigned char, 32>& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (unsigned char b : digest) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

}  // namespace kv
