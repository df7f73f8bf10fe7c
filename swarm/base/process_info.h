// What /proc says of a process of this host: whether it is alive, and when it
// started (so that a pid the kernel gave to another process since is told
// apart from the one recorded).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace swarm {

bool process_alive(pid_t pid);
// /proc/<pid>/stat field 22: its start time in clock ticks since boot.
std::optional<unsigned long long> process_start_ticks(pid_t pid);
// /proc/<pid>/stat field 4: its parent (nullopt when it is gone).
std::optional<pid_t> process_parent(pid_t pid);
// The user a process runs as (nullopt when it is gone).
std::optional<uid_t> process_uid(pid_t pid);
// Every process of this host /proc shows.
std::vector<pid_t> all_processes();
// Whether `pid` is alive (not a zombie) and is still the process that
// started at `start_ticks` (0: not recorded, the pid alone decides).
bool process_is(pid_t pid, unsigned long long start_ticks);
// Its NUL-separated arguments (empty when it is gone).
std::vector<std::string> process_arguments(pid_t pid);
// Whether `pid` itself holds a TCP socket listening on 127.0.0.1:`port` (or on
// every address): the port answering is not enough when another process may
// have taken it between choosing it and binding it. nullopt when this host
// cannot tell (no /proc/net/tcp, or the process's descriptors unreadable).
std::optional<bool> listens_on(pid_t pid, int port);

}  // namespace swarm
