// Fencing tokens and session tokens are revisions of a KV bucket, and a
// server that loses writes it acknowledged (nats-server 2.9 syncs its store
// about once a minute: a power cut takes back the last minute) would hand
// the same revisions out again. So each host keeps, synced to its own disk
// in .swarm/tokens.json, a ceiling above every token it handed out, and the
// ids of the server starts it knows are past that ceiling. A grant on a
// server start it does not know (the server restarted since: it may have
// lost writes) first moves the bucket past the ceiling; a token above the
// ceiling raises it, synced, before it is handed out (adr/0033).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kv/bucket.h"
#include "swarm/base/safe_dir.h"

namespace swarm {

// The ceiling is raised this far above a token that passes it: one synced
// write per this many revisions of a bucket, and at most this many writes
// to move a bucket past it after a server restarts.
inline constexpr std::uint64_t kTokenReserve = 256;
// The key a bucket is moved forward with: no reader takes it for a record
// (slot, lease and task names start with a letter or digit).
inline constexpr const char* kFenceKey = "_fence";

// What tokens.json holds for one bucket.
struct BucketWatermark {
  std::uint64_t ceiling = 0;         // every token handed out on this host is at most this
  std::vector<std::string> servers;  // server starts known to be past it (their ids), newest last
};

class TokenWatermark {
 public:
  // The file `tokens.json` in `dir` (the workspace's .swarm/), and the lock
  // folder its raises and checks are made under.
  TokenWatermark(SafeDir dir, SafeDir locks);

  // Before a write that grants a token on `bucket`: the server connected to
  // is a start known to be past the ceiling, or it is moved past it now.
  // Returns that server's id, for granted().
  std::string before_grant(const kv::Bucket& bucket) const;
  // After the write, before `token` is handed out: throws unavailable when
  // the write may have gone to another server start than `server` (one that
  // may have lost writes: the token may be one handed out before); raises
  // the ceiling, synced, when the token passes it.
  void granted(const kv::Bucket& bucket, const std::string& server, std::uint64_t token) const;

  // What the file says of each bucket (empty when it is missing); a file
  // that cannot be read or parsed is `problem`, and treated as empty.
  std::map<std::string, BucketWatermark> read(std::string* problem = nullptr) const;

 private:
  void write(const std::map<std::string, BucketWatermark>& marks) const;
  SafeDir dir_;
  SafeDir locks_;
};

}  // namespace swarm
