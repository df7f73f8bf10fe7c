// A live status feed for any C++ program, as `swarm status --watch` shows
// it: the sessions of a bucket (or of one slot) from a KV watch, with no
// polling; a session that outlives its TTL is a change too: the server's
// marker says so where it announces expiry (2.11+: adr/0054), else this
// feed judges it by the server's timestamps (2.9 drops it without an event).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "swarm/base/host.h"
#include "swarm/journal/journal.h"
#include "swarm/slots/session_store.h"
#include "swarm/slots/status.h"

namespace swarm {

class StatusWatch {
 public:
  // `slot`: that slot only ("" for every one). `keep_json`: rows keep each
  // record's JSON (for swarm.status.v1). Reads the bucket's TTL and the
  // server's clock once (two round trips), then starts the watch.
  // With `journal`, an expiry the server announces while this feed watches
  // is journaled (session.expired; every feed that sees it writes the same
  // message, which the journal stores once).
  StatusWatch(const SessionStore& store, HostIdentity me, const std::string& slot = {}, bool keep_json = false,
              std::optional<Journal> journal = std::nullopt);
  StatusWatch(const StatusWatch&) = delete;
  StatusWatch& operator=(const StatusWatch&) = delete;

  struct Update {
    bool first = false;                         // the view once the watch caught up: no change in it
    std::vector<LiveSessions::Change> changes;  // else what changed, one or more
    SessionTable view;                          // the sessions after it, sorted and aged now
  };
  // The next update: the first view, or the changes one event (and the
  // expiries due by now) made; nullopt when none came within `timeout`.
  std::optional<Update> next(std::chrono::milliseconds timeout);
  // The sessions now, with their ages ticking (empty before the first view).
  SessionTable view() const;
  bool caught_up() const { return caught_up_; }
  std::chrono::milliseconds ttl() const { return ttl_; }
  // Whether the server announces expiry here (read once, at the start).
  bool announced() const { return announced_; }
  const std::string& bucket_name() const { return bucket_; }
  void stop() { watch_.stop(); }

 private:
  HostIdentity me_;
  bool keep_json_;
  std::string bucket_;
  std::chrono::milliseconds ttl_;
  std::chrono::milliseconds margin_{0};  // states judged with it (observed_state)
  Clock server_now_;
  bool announced_ = false;
  std::optional<Journal> journal_;
  SessionWatch watch_;
  LiveSessions live_;
  bool caught_up_ = false;
};

}  // namespace swarm
