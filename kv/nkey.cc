#include "kv/nkey.h"

#include <openssl/evp.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "kv/error.h"

namespace kv {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
constexpr std::uint8_t kSeedPrefix = 18 << 3;  // 'S'
constexpr std::uint8_t kUserPrefix = 20 << 3;  // 'U'

// CRC-16/XMODEM, as nkeys append it (little-endian) to the bytes they encode.
std::uint16_t crc16(const std::vector<std::uint8_t>& bytes) {
  std::uint16_t crc = 0;
  for (std::uint8_t b : bytes) {
    crc ^= static_cast<std::uint16_t>(b << 8);
    for (int i = 0; i < 8; ++i) crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

std::vector<std::uint8_t> base32_decode(const std::string& text) {
  std::vector<std::uint8_t> out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    const char* at = std::char_traits<char>::find(kAlphabet, 32, c);
    if (at == nullptr) throw Error(Errc::bad_request, "an nkey seed holds a character that is not base32");
    buffer = (buffer << 5) | static_cast<unsigned>(at - kAlphabet);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(buffer >> bits));
      buffer &= (1u << bits) - 1;
    }
  }
  return out;
}

std::string base32_encode(const std::vector<std::uint8_t>& bytes) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (std::uint8_t b : bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += kAlphabet[(buffer >> bits) & 31];
    }
    buffer &= (1u << bits) - 1;
  }
  if (bits > 0) out += kAlphabet[(buffer << (5 - bits)) & 31];
  return out;
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};

}  // namespace

std::string nkey_public_key(const std::string& seed) {
  auto raw = base32_decode(seed);
  // Two prefix bytes, the 32-byte ed25519 seed, a 2-byte checksum.
  if (raw.size() != 36) throw Error(Errc::bad_request, "an nkey seed decodes to 36 bytes; this one does not");
  const std::uint16_t sum = static_cast<std::uint16_t>(raw[34] | (raw[35] << 8));
  raw.resize(34);
  if (crc16(raw) != sum) throw Error(Errc::bad_request, "the nkey seed's checksum does not match");
  if ((raw[0] & 248) != kSeedPrefix) throw Error(Errc::bad_request, "the nkey is not a seed (it does not start with S)");
  const std::uint8_t type = static_cast<std::uint8_t>(((raw[0] & 7) << 5) | ((raw[1] & 248) >> 3));
  if (type != kUserPrefix) throw Error(Errc::bad_request, "the nkey seed is not a user's (SU...)");
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, raw.data() + 2, 32));
  std::vector<std::uint8_t> pub(1 + 32);
  std::size_t length = 32;
  if (!key || EVP_PKEY_get_raw_public_key(key.get(), pub.data() + 1, &length) != 1 || length != 32)
    throw Error(Errc::bad_request, "the nkey seed is not a usable ed25519 key");
  pub[0] = type;
  const std::uint16_t check = crc16(pub);
  pub.push_back(static_cast<std::uint8_t>(check & 0xff));
  pub.push_back(static_cast<std::uint8_t>(check >> 8));
  return base32_encode(pub);
}

std::string read_nkey_seed(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(Errc::bad_request, "cannot read the nkey file " + path);
  std::string word;
  while (in >> word)
    if (word.size() == 58 && word.rfind("SU", 0) == 0) return word;
  throw Error(Errc::bad_request, "the nkey file " + path + " holds no user seed (a word of 58 characters starting with SU)");
}

}  // namespace kv
