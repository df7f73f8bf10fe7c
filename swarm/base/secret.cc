#include "swarm/base/secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "swarm/base/error.h"

namespace swarm {

std::string random_secret() {
  unsigned char bytes[24];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(Errc::internal, std::string("cannot read random bytes for a secret: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

std::optional<std::string> read_secret(const SafeDir& dir, const std::string& name) {
  std::string why;
  auto text = dir.read_file(name, 256, &why);
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  if (text->empty()) return std::nullopt;
  return text;
}

std::string ensure_secret(const SafeDir& dir, const std::string& name) {
  if (auto kept = read_secret(dir, name)) return *kept;
  const std::string made = random_secret();
  if (dir.create_file(name, made + "\n", 0600)) return made;
  // Another process made it first: its secret, once its one write is in.
  for (int i = 0; i < 50; ++i) {
    if (auto kept = read_secret(dir, name)) return *kept;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw Error(Errc::filesystem, (dir.path() / name).string() + " exists but holds no secret; remove it and try again");
}

}  // namespace swarm
