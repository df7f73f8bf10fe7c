#include "swarm/process_info.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace swarm {

bool process_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

namespace {

// A /proc file's bytes, read with read(2): a process that ends while it is
// read makes the read fail (ESRCH), which is "gone", never an exception.
// nullopt when it cannot be read (gone, or another user's).
std::optional<std::string> read_proc(const std::string& path, std::size_t max_bytes = 1 << 20) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  while (text.size() < max_bytes) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return text;
}

template <typename Number>
std::optional<Number> number_of(std::string_view text) {
  Number value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Field `n` (from 3 on) of /proc/<pid>/stat: "pid (comm) state ppid ...".
std::optional<std::string> stat_field(pid_t pid, int n) {
  auto stat = read_proc("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat) return std::nullopt;
  auto paren = stat->rfind(')');  // the command name before it may hold spaces
  if (paren == std::string::npos || paren + 2 > stat->size()) return std::nullopt;
  std::istringstream fields(stat->substr(paren + 2));
  std::string field;
  for (int i = 3; i <= n && fields >> field; ++i)
    if (i == n) return field;
  return std::nullopt;
}

// The names of a /proc folder's entries; empty when it is gone. Never throws.
std::vector<std::string> proc_entries(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) names.emplace_back(entry->d_name);
  ::closedir(dir);
  return names;
}

}  // namespace

std::optional<unsigned long long> process_start_ticks(pid_t pid) {
  auto field = stat_field(pid, 22);
  return field ? number_of<unsigned long long>(*field) : std::nullopt;
}

std::optional<pid_t> process_parent(pid_t pid) {
  auto field = stat_field(pid, 4);
  return field ? number_of<pid_t>(*field) : std::nullopt;
}

std::optional<uid_t> process_uid(pid_t pid) {
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) return std::nullopt;
  return st.st_uid;
}

std::vector<pid_t> all_processes() {
  std::vector<pid_t> out;
  for (const auto& name : proc_entries("/proc"))
    if (auto pid = number_of<pid_t>(name)) out.push_back(*pid);
  return out;
}

bool process_is(pid_t pid, unsigned long long start_ticks) {
  if (!process_alive(pid)) return false;
  if (start_ticks == 0) return true;
  auto ticks = process_start_ticks(pid);
  return !ticks || *ticks == start_ticks;  // unreadable (another user's): alive is all we know
}

std::vector<std::string> process_arguments(pid_t pid) {
  std::vector<std::string> args;
  auto text = read_proc("/proc/" + std::to_string(pid) + "/cmdline");
  if (!text) return args;
  std::size_t start = 0;
  while (start < text->size()) {
    auto end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    args.push_back(text->substr(start, end - start));
    start = end + 1;
  }
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
  auto table = read_proc("/proc/net/tcp", 64 << 20);
  if (!table) return std::nullopt;
  std::istringstream lines(*table);
  std::vector<std::string> sockets;
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
      continue;
    if (state == "0A" && (local == loopback || local == any)) sockets.push_back("socket:[" + inode + "]");
  }
  if (sockets.empty()) return false;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (::access(fd_dir.c_str(), R_OK) != 0) return process_alive(pid) ? std::nullopt : std::optional<bool>(false);
  for (const auto& fd : proc_entries(fd_dir)) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(fd_dir + "/" + fd, ec).string();
    for (const auto& socket : sockets)
      if (target == socket) return true;
  }
  return false;
}

}  // namespace swarm
