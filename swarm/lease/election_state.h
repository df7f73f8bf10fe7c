// What a leader leaves its successor (swarm elect state NAME put|get): bytes
// kept beside the election's lease under "_state.<name>", written by CAS only
// by the token that leads now, with their SHA-256; read back only by the
// token that leads now, the digest checked. Fenced by revision: the lease
// and its state are in one bucket, so a state written after a later token's
// grant by an earlier token (a deposed leader's late write) is told apart
// and never handed out (adr/0045). A put that found, after its write, that
// its token still led confirms it under "_state_ok.<name>"; a get hands out
// only a confirmed state (adr/0048), so a late write nobody confirmed is
// refused by every later leader, not only by the next.
#pragma once

#include <cstdint>
#include <string>

#include "swarm/lease/lease.h"

namespace swarm {

// The most a state may hold: well under a NATS message's 1 MiB.
inline constexpr std::size_t kMaxElectionState = 512 * 1024;

struct ElectionState {
  std::string name;
  std::string data;
  std::string sha256;       // 64 hex digits of data's digest
  std::uint64_t token = 0;  // of the leader that wrote it
  std::string holder, host;
  std::uint64_t revision = 0;
  TimePoint written_at{};   // the server's stamp
  bool to_confirm = false;  // its writer confirms it (_state_ok) once it saw it still led
};

// The lease `name` when `token` leads it now: held by that grant and not past
// its TTL (judged by this machine's clock against the server's stamp of its
// last write: one round trip). conflict ("token T does not lead NAME …")
// otherwise; not_found when nobody ever led it; corrupt for a corrupt record.
LeaseEntry require_leader(const LeaseStore& store, const std::string& name, std::uint64_t token);

// Stores `data` as the state of `name` under `token`, which must lead it, by
// CAS over the state as read; refused (conflict) when a later leader's state
// is there, or when the lease changed hands before the write landed (then
// the write stands unconfirmed, and every later leader's get refuses it).
// Returns the state as stored.
ElectionState put_election_state(const LeaseStore& store, const std::string& name, std::uint64_t token,
                                 const LeaseHolder& by, std::string data);

// The state of `name` for `token`, which must lead it: its digest checked
// (corrupt when it does not match); conflict for a state written by an
// earlier token after `token` was granted, and for one its writer never
// confirmed; not_found when none was put.
ElectionState get_election_state(const LeaseStore& store, const std::string& name, std::uint64_t token);

}  // namespace swarm
