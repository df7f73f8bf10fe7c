// The rules a lease's safety rests on, each written once (adr/0011): how old
// a record was when it was seen, when it expires for whoever watches it, when
// it is certainly expired, which number is its fencing token, which TTLs are
// allowed. The store, the queue, the mutex, the election, task leases and
// doctor all ask these: a rule written twice drifts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "swarm/base/boot_clock.h"
#include "swarm/base/clock.h"
#include "swarm/base/server_clock.h"

namespace swarm {

using Steady = std::chrono::steady_clock;

// Time runs in one of two directions, by role (adr/0023), and every age or
// deadline swarm derives from a read goes through one of the functions below:
// - a HOLDER times its own deadline from just before it SENT the write that
//   granted or renewed its hold: the server stores the write after that, so
//   the record lasts at least until the holder's deadline;
// - a WAITER or OBSERVER times what a read returned from when the answer
//   ARRIVED: the record was stored before that, so however slow the read,
//   what it returned is at least as young as that moment says.
// Taking the other moment is the bug of issue 28: a waiter that aged a record
// from before its slow read took one written during the read for an old one.

// A read's answer with the moment it arrived (taken after the read returned).
template <typename T>
struct Arrived {
  T value;
  Steady::time_point at;
};
// Runs `read` and notes when its answer arrived: the moment a waiter or an
// observer times what it returned from.
template <typename Read>
auto read_arriving(Read&& read) -> Arrived<decltype(read())> {
  auto value = read();
  return {std::move(value), Steady::now()};
}

// HOLDER: until when it may act on a hold whose granting or renewing write it
// sent at `sent` (read just before sending): `ttl` later, on CLOCK_BOOTTIME.
BootTime holder_deadline(BootTime sent, std::chrono::milliseconds ttl);

// A watcher takes a record as expired only this long after its TTL ran out
// by the server's clock: the clock's reading may be off by `uncertainty`, and
// the holder's and the watcher's clocks may run at rates a little apart:
// 50 ms + TTL/1000 + the uncertainty (rounded up to a millisecond).
std::chrono::milliseconds expiry_margin(std::chrono::milliseconds ttl, std::chrono::nanoseconds uncertainty);

// SERVER (2.11+, expiry announced): the TTL a lease's write gives its value,
// after which the server removes it and says so: past every holder's
// deadline, as a waiter's own judgement is (the server times it from its
// stamp, after the holder's send, on a clock that may run 1000 ppm apart):
// the TTL plus the margin without a reading's error, plus a second for a
// server clock that steps ahead (it times the TTL on its wall clock). The
// store rounds it up to whole seconds.
std::chrono::milliseconds server_expiry_after(std::chrono::milliseconds ttl);
// OBSERVER where the server announces expiry: how much later than its own
// judgement it waits for the server's marker, which comes a quarter
// second or so after server_expiry_after (rounded up to a second): a marker
// lost (a watch made anew) or late (a busy server) still ends the wait.
inline constexpr std::chrono::milliseconds kServerMarkerGrace{3000};
// How long a watcher's journal write of an expiry it heard may take: it is
// on the watcher's path (the journal keeps one of many such writes).
inline constexpr std::chrono::milliseconds kJournalBudget{1000};

// OBSERVER: how old a record stored at `stored_at` (the server's stamp) was
// when the answer that returned it arrived (`arrived`), by the server's clock
// run on the monotonic one (a wall clock stepped since does not move it). 0
// when the clock could not be read, or the stamp lies ahead: a waiter then
// only waits longer.
std::chrono::milliseconds age_at_arrival(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at);

// WAITER: when a record, stored at `stored_at` and returned by an answer
// that arrived at `arrived`, expires for it: its TTL minus its age at
// arrival, after arrival, plus the margin (before `arrived` for a record
// that was already older than that).
Steady::time_point observed_expiry(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at,
                                   std::chrono::milliseconds ttl);
// WAITER: the same for a record a live watch delivered at `arrived` (written
// while it watched): taken as new then, age 0, which only waits longer and
// needs no clock reading hours old.
Steady::time_point observed_expiry_of_new(const ServerClock& clock, Steady::time_point arrived,
                                          std::chrono::milliseconds ttl);

// WAITER about to take a record over at `now` (on the monotonic clock): its
// TTL and the margin have passed since it was stored, timed from the
// answer's arrival. Never when the clock could not be read: then the
// holder's own deadline is the only judge.
bool certainly_expired(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at,
                       std::chrono::milliseconds ttl, Steady::time_point now);

// OBSERVER about to act on a session's age (replace a stale one, remove it):
// the age it can be sure of at `now`, timed from the answer's arrival: the
// record's age less the margin of the clock's reading, never below 0.
std::chrono::milliseconds certain_age(const ServerClock& clock, Steady::time_point arrived, TimePoint stored_at,
                                      std::chrono::milliseconds ttl, Steady::time_point now);

// The fencing token of a grant: the revision of the write that granted it.
// A grant cannot write its own revision; its renewals keep it in the record
// (`kept`). While none has, the record's revision is the token. Sessions
// keep their token the same way.
constexpr std::uint64_t token_of(std::uint64_t kept, std::uint64_t revision) { return kept != 0 ? kept : revision; }

// A lease's TTL is 1s to 1h (the contract): else bad_input, naming the value
// as the user gave it (`given`, e.g. "--ttl 2h"), or as a duration.
void require_lease_ttl(std::chrono::milliseconds ttl, std::string_view given = {});

}  // namespace swarm
