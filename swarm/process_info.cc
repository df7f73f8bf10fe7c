#include "swarm/process_info.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace swarm {

bool process_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

namespace {

// Field `n` (from 3 on) of /proc/<pid>/stat: "pid (comm) state ppid ...".
std::optional<std::string> stat_field(pid_t pid, int n) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');  // the command name before it may hold spaces
  if (paren == std::string::npos || paren + 2 > stat.size()) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= n && fields >> field; ++i)
    if (i == n) return field;
  return std::nullopt;
}

}  // namespace

std::optional<unsigned long long> process_start_ticks(pid_t pid) {
  auto field = stat_field(pid, 22);
  if (!field) return std::nullopt;
  return std::stoull(*field);
}

std::optional<pid_t> process_parent(pid_t pid) {
  auto field = stat_field(pid, 4);
  if (!field) return std::nullopt;
  return static_cast<pid_t>(std::stol(*field));
}

std::vector<pid_t> all_processes() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

bool process_is(pid_t pid, unsigned long long start_ticks) {
  if (!process_alive(pid)) return false;
  if (start_ticks == 0) return true;
  auto ticks = process_start_ticks(pid);
  return !ticks || *ticks == start_ticks;  // unreadable (another user's): alive is all we know
}

std::vector<std::string> process_arguments(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

std::optional<bool> listens_on(pid_t pid, int port) {
  if (pid <= 0 || port <= 0 || port > 65535) return false;
  // The inodes of the sockets listening on the port (state 0A), from the
  // kernel's table: "sl local_address rem_address st ... uid timeout inode".
  // The address is the raw network-order word printed as a number, so its
  // digits depend on the byte order; the port is printed as a number.
  char loopback[32], any[32];
  std::snprintf(loopback, sizeof loopback, "%08X:%04X", static_cast<unsigned>(htonl(INADDR_LOOPBACK)),
                static_cast<unsigned>(port));
  std::snprintf(any, sizeof any, "%08X:%04X", 0U, static_cast<unsigned>(port));
  std::ifstream table("/proc/net/tcp");
  if (!table) return std::nullopt;
  std::vector<std::string> sockets;
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
      continue;
    if (state == "0A" && (local == loopback || local == any)) sockets.push_back("socket:[" + inode + "]");
  }
  if (sockets.empty()) return false;
  std::error_code ec;
  std::filesystem::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", ec);
  if (ec) return process_alive(pid) ? std::nullopt : std::optional<bool>(false);
  for (const auto& fd : fds) {
    std::error_code link_ec;
    auto target = std::filesystem::read_symlink(fd.path(), link_ec).string();
    for (const auto& socket : sockets)
      if (target == socket) return true;
  }
  return false;
}

}  // namespace swarm
