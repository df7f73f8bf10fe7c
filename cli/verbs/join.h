// What join takes to join a slot, as one table: join's own options, and
// the same options of `run` (its command binds them to a JoinRequest of
// its own), so that each is written once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/verbs/verb.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

struct JoinRequest {
  std::string slot;
  std::string task;
  bool next = false;                // --next: the queue's most urgent ready task
  std::vector<std::string> labels;  // --label, with --next
  std::string wait;                 // --wait DUR, with --next
  bool force = false;
  std::string base;
  std::int64_t ports = 0;
  bool env = false;  // join's own: shell assignments instead of the path
};

// The options join and run share: --slot, --task, --next, --label, --wait,
// --force, --base and --ports.
std::vector<BoundOption> join_options();
// Exit 2 unless --task or --next was given (not both), and --label and
// --wait only with --next (before any I/O).
void require_join_request(const JoinRequest& r);
// join --task, or join --next with its labels and wait.
swarm::JoinResult join_by(swarm::SlotLifecycle& lifecycle, const JoinRequest& r, std::int64_t leaf_pid,
                          swarm::Joiner joiner);

}  // namespace cli
