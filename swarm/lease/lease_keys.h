// The keys of the lease bucket as the lease package's parts use them: a
// lease's own key (read, watched), a waiter's place and heartbeat, a request
// to resign. Every call says a kv failure in swarm's terms, here and only
// here: the bucket itself stays private to the lease store (LeaseStore::keys).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/bucket.h"
#include "kv/watch.h"

namespace swarm {

class LeaseKeys {
 public:
  std::optional<kv::Entry> get(const std::string& key) const;
  // Several keys in one round trip (kv::Bucket::get_together).
  std::vector<std::optional<kv::Entry>> get_together(const std::vector<std::string>& keys) const;
  // The last write of `key`, a delete marker included (`released` says so).
  std::optional<kv::Entry> last(const std::string& key, bool* released) const;
  // CAS: only if `key` has no value; conflict otherwise.
  std::uint64_t create(const std::string& key, const std::string& value) const;
  // CAS: only if `key` is still at `revision`; conflict otherwise.
  std::uint64_t update(const std::string& key, const std::string& value, std::uint64_t revision) const;
  // CAS delete of `key` at `revision`; its marker carries `marker`.
  void erase(const std::string& key, std::uint64_t revision, const std::string& marker = {}) const;
  // Every key matching `pattern`, each at its newest revision seen.
  std::vector<kv::Entry> list(const std::string& pattern) const;
  kv::Watch watch(const std::string& key) const;
  // Whether the server announces a key's end by its TTL (one request).
  bool announces_expiry() const;
  // The same keys, whose requests (retries included) take at most `budget`.
  LeaseKeys with_budget(std::chrono::milliseconds budget) const { return LeaseKeys(bucket_.with_budget(budget)); }
  // An update to send together with other writes (kv::Bucket::update_together).
  kv::Bucket::Write write(const std::string& key, std::string value, std::uint64_t revision) const {
    return {&bucket_, key, std::move(value), revision};
  }

 private:
  friend class LeaseStore;
  explicit LeaseKeys(kv::Bucket bucket) : bucket_(std::move(bucket)) {}
  kv::Bucket bucket_;
};

}  // namespace swarm
