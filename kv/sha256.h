// SHA-256 over bytes as they pass (libcrypto's), for the object store's
// digests and for whoever names objects by their content.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>

namespace kv {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void add(const char* data, std::size_t size);
  // The 32 bytes, once: nothing may be added after.
  std::array<unsigned char, 32> finish();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// 64 lowercase hex digits of a digest.
std::string hex_of(const std::array<unsigned char, 32>& digest);

}  // namespace kv
