#include "swarm/bus/blobs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <array>
#include <cstring>
#include <memory>

#include "kv/sha256.h"
#include "swarm/base/error.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

constexpr std::size_t kReadBlock = 1 << 20;
// Files up to this size are hashed before they are sent (a blob stored
// before is then not sent again); larger ones are named by the hash taken
// while they are sent, one pass instead of two (adr/0040).
constexpr std::uint64_t kNameFirstMax = std::uint64_t(8) << 20;

std::string hex_of(const unsigned char* sha256) {
  std::array<unsigned char, 32> digest{};
  std::copy(sha256, sha256 + 32, digest.begin());
  return kv::hex_of(digest);
}

// A file's SHA-256 as its hex and as NATS names it.
void finish(kv::Sha256& digest, std::string* hex, std::string* nats) {
  const auto raw = digest.finish();
  *hex = kv::hex_of(raw);
  if (nats != nullptr) *nats = kv::nats_digest(raw.data());
}

// pread until `size` bytes or the end; errno-naming errors.
std::size_t read_at(int fd, char* into, std::size_t size, std::uint64_t offset, const std::string& shown) {
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, into + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(Errc::filesystem, "cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// A put into the blob store: one it has no room for is said as that (its
// own limit met: nothing was stored, every blob it has is kept).
template <typename Put>
auto storing(const kv::ObjectStore& store, Put&& put) -> decltype(put()) {
  try {
    return put();
  } catch (const kv::Error& e) {
    if (!kv::at_own_limit(e)) throw from_kv(e);
    throw Error(Errc::filesystem, "the blob store (" + store.name() + ") is full, so nothing was stored: it keeps "
                                  "every blob it has; remove what no message needs (`swarm doctor` names blobs "
                                  "no kept message names), or raise `swarm up --blob-store-max-bytes` (" +
                                  std::string(e.what()) + ")");
  }
}

}  // namespace

void require_sha256(std::string_view text) {
  if (!is_sha256_hex(text))
    throw Error(Errc::bad_input, "bad blob name '" + printable(text) + "': a SHA-256, 64 lowercase hex digits");
}

void Blobs::ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                   std::int64_t max_bytes) {
  translating_kv([&] { kv::ObjectStore::ensure(connection, names.blobs, replicas, max_bytes); });
}

Blobs::Blobs(const kv::Connection& connection, const WorkspaceNames& names)
    : store_(kv::ObjectStore::bind(connection, names.blobs)) {}

bool Blobs::intact(const kv::ObjectInfo& stored, const std::string& sha256) const {
  if (!is_sha256_hex(sha256)) return false;
  std::array<unsigned char, 32> raw{};
  for (std::size_t i = 0; i < raw.size(); ++i)
    raw[i] = static_cast<unsigned char>(std::stoi(sha256.substr(i * 2, 2), nullptr, 16));
  if (stored.digest != kv::nats_digest(raw.data())) return false;
  try {
    get(sha256, [](const char*, std::size_t) {});
    return true;
  } catch (const Error& e) {
    if (e.kind() == Errc::unavailable) throw;  // NATS trouble says nothing of the object
    return false;  // corrupt, chunks missing, another size
  }
}

bool Blobs::has(const std::string& sha256) const {
  return translating_kv([&] { return store_.info(sha256).has_value(); });
}

BlobRef Blobs::put_file(int fd, const std::string& name, const std::string& shown) const {
  std::uint64_t offset = 0;
  auto reader = [&](char* into, std::size_t room) -> std::size_t {
    const std::size_t n = read_at(fd, into, room, offset, shown);
    offset += n;
    if (n == 0) stop_here_for_test(kBusStop, "blob-read");
    return n;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(Errc::filesystem, "cannot read " + shown + ": " + std::strerror(errno));
  BlobRef ref;
  ref.name = name;
  if (static_cast<std::uint64_t>(st.st_size) <= kNameFirstMax) {
    // Small: named first, so one stored before is not sent again.
    std::vector<char> buffer(kReadBlock);
    kv::Sha256 first;
    std::uint64_t size = 0;
    for (;;) {
      const std::size_t n = read_at(fd, buffer.data(), buffer.size(), size, shown);
      if (n == 0) break;
      first.add(buffer.data(), n);
      size += n;
    }
    std::string nats;
    finish(first, &ref.sha256, &nats);
    ref.size = size;
    stop_here_for_test(kBusStop, "blob-named");
    // One stored before is not sent again: once it is read back whole
    // (a planted object of that name and size is replaced, never trusted).
    if (auto there = translating_kv([&] { return store_.info(ref.sha256); });
        there && there->size == size && intact(*there, ref.sha256))
      return ref;
    // Its description is written only if what was sent hashes to the name:
    // a file that changed between the two reads stores nothing.
    storing(store_, [&] {
      return store_.put_named(
          [&](const unsigned char* sha256) {
            if (hex_of(sha256) != ref.sha256 || offset != size)
              throw Error(Errc::filesystem, shown + " changed while it was stored; nothing was stored, try again");
            return ref.sha256;
          },
          reader, 64, [&](const kv::ObjectInfo& theirs) { return intact(theirs, ref.sha256); });
    });
    return ref;
  }
  // Large: named by what was stored, in one pass (the content's own hash;
  // one stored before keeps its place and this copy is taken back).
  auto stored = storing(store_, [&] {
    return store_.put_named([](const unsigned char* sha256) { return hex_of(sha256); }, reader, 64,
                            [&](const kv::ObjectInfo& theirs) { return intact(theirs, theirs.name); });
  });
  ref.sha256 = stored.name;
  ref.size = stored.size;
  return ref;
}

BlobRef Blobs::put_bytes(std::string_view data, const std::string& name) const {
  kv::Sha256 digest;
  digest.add(data.data(), data.size());
  BlobRef ref;
  ref.name = name;
  ref.size = data.size();
  std::string nats;
  finish(digest, &ref.sha256, &nats);
  if (auto there = translating_kv([&] { return store_.info(ref.sha256); });
      there && there->size == ref.size && intact(*there, ref.sha256))
    return ref;
  std::size_t at = 0;
  storing(store_, [&] {
    return store_.put_named(
        [&](const unsigned char*) { return ref.sha256; },
        [&](char* into, std::size_t room) {
          const std::size_t n = std::min(room, data.size() - at);
          std::memcpy(into, data.data() + at, n);
          at += n;
          return n;
        },
        64, [&](const kv::ObjectInfo& theirs) { return intact(theirs, ref.sha256); });
  });
  return ref;
}

BlobRef Blobs::get(const std::string& sha256, const std::function<void(const char*, std::size_t)>& write) const {
  kv::Sha256 digest;
  kv::ObjectInfo info;
  try {
    info = store_.get(sha256, [&](const char* data, std::size_t size) {
      digest.add(data, size);
      write(data, size);
    });
  } catch (const kv::Error& e) {
    if (e.kind() == kv::Errc::not_found)
      throw Error(Errc::blob_missing, "blob_missing: blob " + sha256 + " is not in the store (" + store_.name() +
                                          "): it was never stored on this NATS, or it was removed");
    throw from_kv(e);
  }
  BlobRef ref;
  ref.size = info.size;
  finish(digest, &ref.sha256, nullptr);
  if (ref.sha256 != sha256)
    throw Error(Errc::corrupt, "blob " + sha256 + " is corrupt in the store: its bytes hash to " + ref.sha256 +
                                   "; nothing was kept");
  return ref;
}

std::vector<std::string> Blobs::names() const {
  auto all = translating_kv([&] { return store_.names(); });
  // Only what swarm names a blob: anything else in the store is another's (or planted).
  std::erase_if(all, [](const std::string& name) { return !is_sha256_hex(name); });
  return all;
}

std::vector<kv::ObjectStore::Leftover> Blobs::leftovers() const {
  return translating_kv([&] { return store_.leftovers(); });
}

void Blobs::remove_leftover(const std::string& nuid) const {
  translating_kv([&] { store_.remove_chunks(nuid); });
}

}  // namespace swarm
