#include "swarm/slots/status_watch.h"

#include <algorithm>

#include "swarm/lease/rules.h"
#include "swarm/slots/events.h"

namespace swarm {

StatusWatch::StatusWatch(const SessionStore& store, HostIdentity me, const std::string& slot, bool keep_json,
                         std::optional<Journal> journal)
    : me_(std::move(me)),
      keep_json_(keep_json),
      bucket_(store.bucket_name()),
      ttl_(store.ttl()),
      server_now_([&] {
        const ServerClock clock = store.server_clock();
        margin_ = observer_margin(ttl_, clock.uncertainty);
        return clock.now;
      }()),
      announced_([&] {
        try {
          return store.announces_expiry();
        } catch (const Error&) {
          return false;  // not known: judged by this feed's clock alone, as on 2.9
        }
      }()),
      journal_(std::move(journal)),
      watch_(store.watch(slot.empty() ? ">" : slot)) {}

SessionTable StatusWatch::view() const {
  SessionTable table(me_, keep_json_);
  for (const auto& entry : live_.entries()) table.add(entry);
  table.finish(0, ttl_, server_now_(), margin_);
  return table;
}

std::optional<StatusWatch::Update> StatusWatch::next(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    auto event = watch_.next(std::max(left, std::chrono::milliseconds(0)));
    std::vector<LiveSessions::Change> changes;
    if (event && event->kind == SessionEvent::Kind::caught_up) {
      caught_up_ = true;
      return Update{true, {}, view()};
    }
    if (event)
      if (auto change = live_.apply(*event)) {
        if (change->by_server && caught_up_ && journal_ && change->ended)
          journal_->with_budget(kJournalBudget).record(session_expired_event(bucket_, *change->ended, change->revision, change->at, me_));
        changes.push_back(std::move(*change));
      }
    if (caught_up_)
      for (auto& change : live_.expire(server_now_(), ttl_, announced_ ? kServerMarkerGrace : std::chrono::milliseconds(0)))
        changes.push_back(std::move(change));
    if (caught_up_ && !changes.empty()) return Update{false, std::move(changes), view()};
    // By the deadline, however many events that change nothing keep coming
    // (a long replay): the caller checks for a signal between calls.
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
  }
}

}  // namespace swarm
