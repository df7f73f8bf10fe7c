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

std::optional<unsigned long long> process_start_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');  // the command name before it may hold spaces
  if (paren == std::string::npos || paren + 2 > stat.size()) return std::nullopt;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stoull(field);
  return std::nullopt;
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
