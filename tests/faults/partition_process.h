// The long-lived processes of a partition run (servers, lock loops): each in
// a process group of its own, so that what it starts dies with it, with its
// output appended to a log; and whether a server listens yet.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace partition {

// Starts `args` (found on PATH) with `env` on top of ours ("" unsets) in `cwd`.
pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& log,
            const std::map<std::string, std::string>& env = {}, const std::filesystem::path& cwd = {});

// Whether `pid` has exited (and is reaped now).
bool reaped(pid_t pid);

// Signals the group, then SIGKILL after `grace`; reaps the leader.
void stop_group(pid_t& pid, int signo, std::chrono::milliseconds grace);

// Whether a TCP connection to ip:port is accepted.
bool accepts(const std::string& ip, int port);

}  // namespace partition
