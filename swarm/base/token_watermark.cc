#include "swarm/base/token_watermark.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "swarm/base/error.h"
#include "swarm/base/file_lock.h"
#include "swarm/base/json.h"
#include "swarm/base/log.h"
#include "swarm/base/warnings.h"

namespace swarm {

namespace {

constexpr const char* kFileName = "tokens.json";
constexpr const char* kLockName = "tokens";
constexpr std::size_t kMaxFileBytes = 256 * 1024;
// Server starts remembered per bucket (a cluster's nodes, and a few restarts).
constexpr std::size_t kServersKept = 16;
// A bucket this far behind its ceiling is another's (a workspace moved to an
// empty server keeps its ceiling: moving that far is refused, and said).
constexpr std::uint64_t kMostMoved = 10'000'000;
// Raises and checks of the file are short: a holder is a process granting.
constexpr std::chrono::seconds kLockWait{30};

FileLock lock(const SafeDir& locks) {
  auto held = FileLock::acquire(locks, kLockName, "a token grant", kLockWait);
  if (!held)
    throw Error(Errc::conflict, "another swarm process kept " + (locks.path() / kLockName).string() +
                                    " locked for " + std::to_string(kLockWait.count()) + "s; try again");
  return std::move(*held);
}

}  // namespace

TokenWatermark::TokenWatermark(SafeDir dir, SafeDir locks) : dir_(std::move(dir)), locks_(std::move(locks)) {}

std::map<std::string, BucketWatermark> TokenWatermark::read(std::string* problem) const {
  std::map<std::string, BucketWatermark> out;
  if (dir_.kind(kFileName) == EntryKind::missing) return out;
  std::string why;
  auto text = dir_.read_file(kFileName, kMaxFileBytes, &why);
  Json json = text ? Json::parse(*text) : Json();
  const cJSON* buckets = json ? cJSON_GetObjectItemCaseSensitive(json.get(), "buckets") : nullptr;
  if (!cJSON_IsObject(buckets)) {
    if (problem != nullptr)
      *problem = (dir_.path() / kFileName).string() + (text ? " is not what swarm writes" : " cannot be read: " + why);
    return out;
  }
  const cJSON* bucket = nullptr;
  cJSON_ArrayForEach(bucket, buckets) {
    BucketWatermark mark;
    const cJSON* ceiling = cJSON_GetObjectItemCaseSensitive(bucket, "ceiling");
    if (cJSON_IsNumber(ceiling) && ceiling->valuedouble >= 0 && ceiling->valuedouble < 9.0e15)
      mark.ceiling = static_cast<std::uint64_t>(std::floor(ceiling->valuedouble));
    const cJSON* server = nullptr;
    cJSON_ArrayForEach(server, cJSON_GetObjectItemCaseSensitive(bucket, "servers")) {
      if (cJSON_IsString(server)) mark.servers.emplace_back(server->valuestring);
    }
    out[bucket->string] = std::move(mark);
  }
  return out;
}

void TokenWatermark::write(const std::map<std::string, BucketWatermark>& marks) const {
  Json buckets = Json::object();
  for (const auto& [name, mark] : marks) {
    Json one = Json::object();
    one.set("ceiling", static_cast<std::uint64_t>(mark.ceiling)).set("servers", Json::strings(mark.servers));
    buckets.set(name.c_str(), std::move(one));
  }
  Json doc = Json::object();
  doc.set("schema", "swarm.tokens.v1").set("buckets", std::move(buckets));
  // Synced before any token it covers is handed out: a crash of this
  // machine keeps it, whatever the server's store lost.
  dir_.write_file(kFileName, doc.dump_pretty() + "\n", 0644, true);
}

std::string TokenWatermark::before_grant(const kv::Bucket& bucket) const {
  const std::string server = bucket.connection().server_id();
  auto known = [&](const std::map<std::string, BucketWatermark>& marks) {
    auto it = marks.find(bucket.name());
    if (it == marks.end()) return false;
    const auto& servers = it->second.servers;
    return std::find(servers.begin(), servers.end(), server) != servers.end();
  };
  if (server.empty()) return server;  // not connected: the write fails on its own
  if (known(read())) return server;
  FileLock held = lock(locks_);
  std::string problem;
  auto marks = read(&problem);
  if (!problem.empty()) warn(problem + ": tokens this host handed out before are no longer guarded against a server "
                                       "that lost writes; it is written anew");
  if (known(marks)) return server;
  BucketWatermark& mark = marks[bucket.name()];
  if (mark.ceiling > 0) {
    // A server start this host has not seen since its last grant here: it
    // may have restarted on a store that lost what it acknowledged.
    const std::uint64_t last = translating_kv([&] { return bucket.last_revision(); });
    if (last < mark.ceiling) {
      if (mark.ceiling - last > kMostMoved)
        throw Error(Errc::conflict,
                    "bucket " + bucket.name() + " is at revision " + std::to_string(last) + " while this host handed "
                    "out tokens up to " + std::to_string(mark.ceiling) + " (" + (dir_.path() / kFileName).string() +
                    "): it is not the bucket those came from. Remove that file if this workspace moved to this "
                    "server on purpose (tokens then start again from the bucket's)");
      swarm::log::info("bucket {} is at revision {}, below {} (a server restart): moving it past", bucket.name(), last,
                       mark.ceiling);
      translating_kv([&] { bucket.advance_to(mark.ceiling, kFenceKey); });
    }
  }
  mark.servers.push_back(server);
  if (mark.servers.size() > kServersKept)
    mark.servers.erase(mark.servers.begin(), mark.servers.end() - static_cast<std::ptrdiff_t>(kServersKept));
  write(marks);
  return server;
}

void TokenWatermark::granted(const kv::Bucket& bucket, const std::string& server, std::uint64_t token) const {
  const std::string now = bucket.connection().server_id();
  if (now != server)
    throw Error(Errc::unavailable, "the NATS server changed (restarted, or another node) while a token was granted "
                                   "on bucket " + bucket.name() + ", so token " + std::to_string(token) +
                                   " may be one handed out before; it is not used: try again");
  auto below = [&](const std::map<std::string, BucketWatermark>& marks) {
    auto it = marks.find(bucket.name());
    return it != marks.end() && token <= it->second.ceiling;
  };
  if (below(read())) return;
  FileLock held = lock(locks_);
  auto marks = read();
  if (below(marks)) return;
  marks[bucket.name()].ceiling = token + kTokenReserve;
  write(marks);
}

}  // namespace swarm
