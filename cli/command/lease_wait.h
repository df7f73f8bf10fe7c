// What `lock`, `elect` and `lease acquire --wait` share: a wait in line that a
// signal to swarm stops (it leaves the line), and the command run under the
// lease with swarm's signals going to it (swarm::run_holding, adr/0013).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/command/context.h"
#include "cli/verbs/signal_router.h"
#include "swarm/base/child_process.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/mutex.h"

namespace cli {

struct HoldOptions {
  std::vector<std::string> command;
  bool hear_resign = false;  // elect: a request to step down stops the command
  std::chrono::milliseconds waited{0};  // how long it waited for the lease (for --json)
  std::optional<int> permit;            // a semaphore's permit: SWARM_PERMIT, and "permit" in --json
};

// Waits for a permit of semaphore `name` for `who` (lock/lease acquire
// --limit): its limit stored as `limit`, or checked against the stored one
// (exit 2 naming it); `wait` 0: one try (exit 3 when none is free);
// otherwise in line at the semaphore's gate (as wait_in_line), then for a
// permit under the limit, the gate kept meanwhile and left once a permit is
// taken. nullopt: a signal ended the wait (said as a note).
std::optional<swarm::Lease> wait_for_permit(const Context& ctx, const swarm::LeaseStore& store, const std::string& name,
                                            int limit, const swarm::LeaseHolder& who, std::chrono::milliseconds ttl,
                                            std::optional<std::chrono::milliseconds> wait, SignalRouter& signals);

// Runs the command holding `lease` (swarm::run_holding), with this process's
// signals going to it, and what happens said as notes; a signal that came
// before it started runs nothing. Returns the command's exit status, or 0
// when a leader stepped down because it was asked to (a service manager
// must not count that as a failure). With --json, prints swarm.lock.v1:
// the lease, its token, how long it waited, CMD's status and why CMD
// ended (exited, lease_lost, resigned, signalled).
int hold_while_running(const Context& ctx, const swarm::LeaseStore& store, swarm::Lease lease,
                       const HoldOptions& options, SignalRouter& signals);

// 128 + the signal that ended a wait, as a shell reports a process it ended.
inline int exit_for_signal(int signo) { return 128 + signo; }

// The options every lease verb shares (lease, lock, elect).
// NAME: a lease name (exit 2 naming it otherwise).
// A name swarm takes for itself (task., ports., land., a semaphore's parts)
// refused too: for the verbs that take a lease by a name given.
CLI::Validator user_lease_name_validator();
CLI::Validator lease_name_validator();
// --ttl: a duration of 1s to 1h, else bad_input naming it.
std::chrono::milliseconds lease_ttl_option(const std::string& text);
// The command after "--" (CLI11 keeps everything after it): bad_input when
// there is none, with an example for `verb`.
std::vector<std::string> command_after_dashes(const std::vector<std::string>& command, const char* verb);

// Waits in `mutex`'s line (`wait`: at most that long; nullopt: for ever) for
// lease `name`; a signal from `signals` leaves the line: nullopt then, with a
// note saying so (the caller exits 128 + signal).
// While it waits longer than a moment, says once on stderr who holds the
// lease and its place in line (on a terminal, a line cleared when granted).
std::optional<swarm::Lease> wait_in_line(const Context& ctx, const swarm::LeaseStore& store, swarm::Mutex& mutex,
                                         const std::string& name, std::optional<std::chrono::milliseconds> wait,
                                         SignalRouter& signals);

// --holder: shown in tables and JSON, so one line of printable text (1 to 200
// bytes); anything else is exit 2 naming it.
CLI::Validator holder_validator();

}  // namespace cli
