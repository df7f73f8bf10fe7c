#include "swarm/base/process_info.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <cstdint>
#include <sstream>
#include <string_view>

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
  // A zombie ended: only its parent has not reaped it yet.
  if (auto state = stat_field(pid, 3); state && (*state == "Z" || *state == "X")) return false;
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

namespace {

// The inode of the TCP socket listening on 127.0.0.1:`port` or on every
// address, from the kernel's socket diagnostics (netlink): it looks at the
// listening sockets alone, where /proc/net/tcp walks every connection of the
// host (milliseconds on a big one, on every verb). nullopt when none
// listens; throws nothing (-1: the kernel could not tell).
long long listening_inode(int port) {
  int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return -1;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.request.sdiag_family = AF_INET;
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = 1U << 10;  // TCP_LISTEN
  if (::send(fd, &ask, sizeof ask, 0) != static_cast<ssize_t>(sizeof ask)) {
    ::close(fd);
    return -1;
  }
  long long found = 0;
  bool done = false;
  alignas(nlmsghdr) char buffer[16384];
  while (!done) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      found = -1;
      break;
    }
    // The messages one by one (netlink's macros are written with C casts).
    constexpr std::size_t kAlign = 4;
    const std::size_t header = (sizeof(nlmsghdr) + kAlign - 1) & ~(kAlign - 1);
    for (std::size_t at = 0; at + sizeof(nlmsghdr) <= static_cast<std::size_t>(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buffer + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > static_cast<std::size_t>(n)) break;
      at += (h->nlmsg_len + kAlign - 1) & ~(kAlign - 1);
      if (h->nlmsg_type == NLMSG_DONE) {
        done = true;
        break;
      }
      if (h->nlmsg_type == NLMSG_ERROR) {
        found = -1;
        done = true;
        break;
      }
      if (h->nlmsg_len < header + sizeof(inet_diag_msg)) continue;
      const auto* msg = reinterpret_cast<const inet_diag_msg*>(reinterpret_cast<const char*>(h) + header);
      const std::uint32_t address = ntohl(msg->id.idiag_src[0]);
      if (ntohs(msg->id.idiag_sport) == port && (address == INADDR_LOOPBACK || address == INADDR_ANY) && found == 0)
        found = msg->idiag_inode;
    }
  }
  ::close(fd);
  return found;
}

}  // namespace

std::optional<bool> listens_on(pid_t pid, int port) {
  if (pid <= 0 || port <= 0 || port > 65535) return false;
  const long long inode = listening_inode(port);
  if (inode < 0) return std::nullopt;  // no socket diagnostics here
  if (inode == 0) return false;
  const std::string socket = "socket:[" + std::to_string(inode) + "]";
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (::access(fd_dir.c_str(), R_OK) != 0) return process_alive(pid) ? std::nullopt : std::optional<bool>(false);
  char target[64];
  for (const auto& fd : proc_entries(fd_dir)) {
    ssize_t n = ::readlink((fd_dir + "/" + fd).c_str(), target, sizeof target - 1);
    if (n > 0 && std::string_view(target, static_cast<std::size_t>(n)) == socket) return true;
  }
  return false;
}

}  // namespace swarm
