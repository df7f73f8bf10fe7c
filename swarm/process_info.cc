#include "swarm/process_info.h"

#include <signal.h>

#include <cerrno>
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

}  // namespace swarm
