// An object store laid out as NATS's own (stream OBJ_<store>, an object's
// chunks on $O.<store>.C.<nuid>, its description on $O.<store>.M.<name in
// base64url>), so `nats object` reads what swarm writes. nats.c has no
// object store: this is the part of one that swarm needs. An object is
// there whole or not at all: its description is written last, naming
// chunks the server already acknowledged.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kv/connection.h"
#include "kv/stream.h"

namespace kv {

struct ObjectInfo {
  std::string name;
  std::uint64_t size = 0;
  std::uint64_t chunks = 0;
  std::string nuid;    // where its chunks are
  std::string digest;  // "SHA-256=<base64url>", as NATS writes it
  std::chrono::system_clock::time_point mtime{};
  std::uint64_t seq = 0;  // its description's sequence in the stream (0: not read back)
};

// The size of a chunk swarm writes (NATS's default).
inline constexpr std::size_t kObjectChunkBytes = 128 * 1024;

class ObjectStore {
 public:
  // Makes the store's stream (file storage, rollups allowed, `max_bytes`
  // -1 for no limit, refusing new objects at it), or brings an existing
  // one's limit to `max_bytes` (never below what it holds).
  static ObjectStore ensure(const Connection& connection, const std::string& store, int replicas,
                            std::int64_t max_bytes);
  // Binds it with no round trip.
  static ObjectStore bind(const Connection& connection, const std::string& store);

  const std::string& name() const { return store_; }

  // The object's description; nullopt when it is missing or deleted.
  std::optional<ObjectInfo> info(const std::string& object) const;

  // Stores what `read` hands out (it fills the buffer it is given and
  // returns how much, 0 at the end) as `object`, streamed: at most
  // `in_flight` chunks wait for their acknowledgement at once. When another
  // put stored the object first, that one stays and ours is removed; the
  // result is what is stored either way.
  ObjectInfo put(const std::string& object, const std::function<std::size_t(char*, std::size_t)>& read,
                 int in_flight = 64) const;
  // The same, the object named by `name_of` from the SHA-256 of what was
  // read (32 bytes), once it is all stored: content addressed in one pass.
  // An object stored under that name first stays, unless `keep` says no
  // (it is not what it says it is): then ours is written over it, and its
  // chunks removed.
  ObjectInfo put_named(const std::function<std::string(const unsigned char* sha256)>& name_of,
                       const std::function<std::size_t(char*, std::size_t)>& read, int in_flight = 64,
                       const std::function<bool(const ObjectInfo& theirs)>& keep = {}) const;

  // Hands the object's bytes to `write` in order and returns its
  // description with `digest` as computed from what came (the caller
  // compares); not_found when it is missing; internal when chunks are
  // missing or its size is not the description's.
  ObjectInfo get(const std::string& object, const std::function<void(const char*, std::size_t)>& write) const;

  // The names of the objects stored (descriptions that are not deleted).
  std::vector<std::string> names() const;

  // Chunks no description names: what a put killed before its description
  // left. Each with when its last chunk was stored (a put under way writes
  // its chunks now).
  struct Leftover {
    std::string nuid;
    std::chrono::system_clock::time_point last{};
  };
  std::vector<Leftover> leftovers() const;
  // Removes the chunks of `nuid`.
  void remove_chunks(const std::string& nuid) const;

 private:
  ObjectStore(Connection connection, std::string store);
  std::string meta_subject(const std::string& object) const;
  std::string chunk_subject(const std::string& nuid) const;
  Connection connection_;
  std::string store_;
  Stream stream_;
};

// "SHA-256=<base64url>" of a raw 32-byte digest, as NATS names it.
std::string nats_digest(const unsigned char* sha256);

}  // namespace kv
