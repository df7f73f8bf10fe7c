// ServeView's inboxes feed: those with a cursor or with messages sent to
// them, counted from what the feed itself reads (never a consumer per inbox
// on the server): an ordered read of the workspace's bus subjects keeps each
// subject's sequences, a watch of the cursors keeps where each inbox is, and
// the stream's first sequence (looked at every few seconds) drops what
// retention dropped. A workspace made before messages has no bus: looked for
// again until `up` makes it.
#include <algorithm>
#include <map>
#include <set>

#include "cli/serve/serve_view.h"
#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"

namespace cli {

namespace {

using Steady = std::chrono::steady_clock;
// How often the feed looks at the bus's first sequence (what retention
// dropped is no longer unread).
constexpr std::chrono::seconds kInboxesLookAgain{3};
// How long the feed waits on the bus, then on the cursors, in turn.
constexpr std::chrono::milliseconds kInboxesWait{50};

// What the feed has read: each inbox's messages and those to all (their
// sequences, ascending), each inbox's cursor, and the bus's first sequence.
struct InboxCounts {
  std::map<std::string, std::vector<std::uint64_t>> to;
  std::vector<std::uint64_t> all;
  std::map<std::string, std::uint64_t> at;
  std::uint64_t first = 0;

  // A message on `rest`, the subject after the workspace's bus prefix.
  void sent(const std::string& rest, std::uint64_t seq) {
    if (rest == "all") all.push_back(seq);
    else if (rest.rfind("to.", 0) == 0) to[rest.substr(3)].push_back(seq);
  }

  // Retention dropped everything below `first_now`.
  void drop_below(std::uint64_t first_now) {
    first = first_now;
    auto prune = [&](std::vector<std::uint64_t>& seqs) {
      seqs.erase(seqs.begin(), std::lower_bound(seqs.begin(), seqs.end(), first));
    };
    prune(all);
    for (auto& [name, seqs] : to) prune(seqs);
  }

  // Each inbox's cursor and how many messages after it are still kept.
  std::vector<InboxRow> rows() const {
    std::set<std::string> names;
    for (const auto& [name, seqs] : to) names.insert(name);
    for (const auto& [name, seq] : at) names.insert(name);
    auto after = [](const std::vector<std::uint64_t>& seqs, std::uint64_t c) {
      return static_cast<std::uint64_t>(seqs.end() - std::upper_bound(seqs.begin(), seqs.end(), c));
    };
    std::vector<InboxRow> out;
    for (const auto& name : names) {
      const auto cursor_at = at.find(name);
      const std::uint64_t cursor = cursor_at == at.end() ? 0 : cursor_at->second;
      const std::uint64_t from = std::max(cursor, first > 0 ? first - 1 : 0);
      const auto own = to.find(name);
      out.push_back({name, cursor, (own == to.end() ? 0 : after(own->second, from)) + after(all, from)});
    }
    return out;
  }
};

}  // namespace

void ServeView::inboxes_feed(ServeLink& link) {
  feed("inboxes", [&] {
    const std::string bucket = link.landing.sessions().bucket_name();
    const swarm::Bus bus(link.connection, link.names);
    std::optional<kv::StreamStatus> st;
    while (running()) {
      st = bus.state();
      if (st) break;
      set_up("inboxes", true);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, kLookAgainForMissing, [&] { return !running(); });
    }
    if (!st) return;
    const std::int64_t generation = swarm::generation_of(*st);
    const std::string prefix = link.names.bus_root + bucket + ".";
    auto reader = kv::Stream::bind(link.connection, link.names.bus).read(prefix + ">", {.seq = st->first_seq});
    kv::Watch cursors = kv::Bucket::bind(link.connection, link.names.cursors).watch(bucket + ".*");
    InboxCounts counts;
    counts.first = st->first_seq;
    auto looked = Steady::now();
    bool dirty = true;
    while (running()) {
      // What came on the bus, as it comes.
      // Each waits a little in turn (a watch asked for a millisecond may
      // spend it asking the server what is pending, and never deliver).
      while (auto m = reader.next(dirty ? std::chrono::milliseconds(1) : kInboxesWait)) {
        counts.sent(m->subject.substr(prefix.size()), m->seq);
        dirty = true;
        if (!running()) return;
      }
      while (auto e = cursors.next(kInboxesWait)) {
        if (e->kind == kv::WatchEvent::Kind::caught_up) continue;
        const std::string name = e->entry.key.substr(bucket.size() + 1);
        if (e->kind == kv::WatchEvent::Kind::put) {
          const auto [seq, of] = swarm::Cursors::parse(e->entry.value);
          counts.at[name] = of == generation ? seq : 0;
        } else {
          counts.at.erase(name);
        }
        dirty = true;
      }
      if (Steady::now() - looked > kInboxesLookAgain) {
        looked = Steady::now();
        auto now = bus.state();
        // A bus made anew: read again from its start (the supervisor does, at once).
        if (!now || swarm::generation_of(*now) != generation) throw swarm::Error(swarm::Errc::unavailable, "the bus was made anew");
        if (now->first_seq != counts.first) {
          counts.drop_below(now->first_seq);
          dirty = true;
        }
      }
      if (!dirty) continue;
      auto rows = counts.rows();
      {
        std::lock_guard lock(mu_);
        inboxes_ = std::move(rows);
        ++version_;
      }
      cv_.notify_all();
      set_up("inboxes", true);
      dirty = false;
    }
  });
}

}  // namespace cli
