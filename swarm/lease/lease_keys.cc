#include "swarm/lease/lease_keys.h"

#include "swarm/base/error.h"

namespace swarm {

std::optional<kv::Entry> LeaseKeys::get(const std::string& key) const {
  return translating_kv([&] { return bucket_.get(key); });
}

std::vector<std::optional<kv::Entry>> LeaseKeys::get_together(const std::vector<std::string>& keys) const {
  return translating_kv([&] { return bucket_.get_together(keys); });
}

std::optional<kv::Entry> LeaseKeys::last(const std::string& key, bool* released) const {
  return translating_kv([&] { return bucket_.last(key, released); });
}

std::uint64_t LeaseKeys::create(const std::string& key, const std::string& value) const {
  return translating_kv([&] { return bucket_.create(key, value); });
}

std::uint64_t LeaseKeys::update(const std::string& key, const std::string& value, std::uint64_t revision) const {
  return translating_kv([&] { return bucket_.update(key, value, revision); });
}

void LeaseKeys::erase(const std::string& key, std::uint64_t revision, const std::string& marker) const {
  translating_kv([&] { bucket_.erase(key, revision, marker); });
}

std::vector<kv::Entry> LeaseKeys::list(const std::string& pattern) const {
  std::vector<kv::Entry> entries;
  translating_kv([&] { bucket_.for_each([&](kv::Entry&& e) { entries.push_back(std::move(e)); }, false, pattern); });
  kv::drop_repeats(entries, bucket_.revision_at_open(), [](const kv::Entry& e) -> const std::string& { return e.key; },
                   [](const kv::Entry& e) { return e.revision; });
  return entries;
}

bool LeaseKeys::announces_expiry() const {
  return translating_kv([&] { return bucket_.announces_expiry(); });
}

kv::Watch LeaseKeys::watch(const std::string& key) const {
  return translating_kv([&] { return bucket_.watch(key); });
}

}  // namespace swarm
