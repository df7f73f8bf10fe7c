#include "swarm/workspace/store_shares.h"

#include <sys/statvfs.h>

#include <algorithm>

#include "swarm/bus/message.h"
#include "swarm/journal/journal.h"

namespace swarm {

namespace {

constexpr std::int64_t kSmallestShare = std::int64_t(1) << 20;

std::int64_t share(std::optional<std::uint64_t> room, std::int64_t most, std::uint64_t parts) {
  if (!room) return most;
  return std::max(kSmallestShare, std::min(most, static_cast<std::int64_t>(*room / parts)));
}

}  // namespace

StoreShares store_shares(const kv::Connection& nats, const std::filesystem::path& embedded_data) {
  StoreShares out;
  if (auto store = nats.jetstream_store(std::chrono::seconds(3))) {
    // What is left of the account's limit: another workspace's streams on
    // the same account hold the rest.
    const auto limit = static_cast<std::uint64_t>(std::max<std::int64_t>(store->limit, 0));
    out.room = limit > store->used ? limit - store->used : 0;
  } else if (!embedded_data.empty()) {
    struct statvfs fs {};
    if (::statvfs(embedded_data.c_str(), &fs) == 0)
      out.room = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize / 4 * 3;
  }
  // Half for the journal, an eighth for the bus, a quarter for blobs; the
  // last eighth is the buckets' (sessions, leases, tasks, cursors).
  out.journal = share(out.room, kEventsMaxBytes, 2);
  out.bus = share(out.room, kBusMaxBytes, 8);
  out.blobs = share(out.room, kDefaultBlobStoreBytes, 4);
  return out;
}

}  // namespace swarm
