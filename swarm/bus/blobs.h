// Large payloads beside the bus: the workspace's object store, each blob
// under its SHA-256 (so one stored twice is stored once), written whole
// before any message names it, and checked against its name on the way out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kv/connection.h"
#include "kv/object_store.h"
#include "swarm/base/workspace_names.h"
#include "swarm/bus/message.h"

namespace swarm {

// Exit 2 naming the value unless it is one.
void require_sha256(std::string_view text);

class Blobs {
 public:
  // Makes the store (what `up` does), or checks it, with at most
  // `max_bytes` in all: full, it refuses a new blob (exit 9) and keeps
  // every one it has.
  static void ensure(const kv::Connection& connection, const WorkspaceNames& names, int replicas,
                     std::int64_t max_bytes);
  Blobs(const kv::Connection& connection, const WorkspaceNames& names);

  // Stores what the open file `fd` holds (read twice from its start: once
  // to name it, once to store it, streamed). A blob already stored is not
  // sent again. A file that changed between the two reads is stored not at
  // all (exit 9 naming `shown`).
  BlobRef put_file(int fd, const std::string& name, const std::string& shown) const;
  // The same for bytes in memory.
  BlobRef put_bytes(std::string_view data, const std::string& name) const;

  // Hands blob `sha256`'s bytes to `write` in order; blob_missing when it
  // is not stored, corrupt when what came does not hash to its name (the
  // caller drops what it wrote).
  BlobRef get(const std::string& sha256, const std::function<void(const char*, std::size_t)>& write) const;
  // Whether it is stored (one request).
  bool has(const std::string& sha256) const;
  // Whether the object stored as `stored` is blob `sha256` indeed: its
  // description names that digest and its bytes, read back, hash to it.
  // A put never skips an upload, nor leaves a copy standing, on less.
  bool intact(const kv::ObjectInfo& stored, const std::string& sha256) const;
  // Every blob stored.
  std::vector<std::string> names() const;
  // Chunks no blob's description names (a put killed halfway), and their removal.
  std::vector<kv::ObjectStore::Leftover> leftovers() const;
  void remove_leftover(const std::string& nuid) const;

 private:
  kv::ObjectStore store_;
};

}  // namespace swarm
