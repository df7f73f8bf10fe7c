#include "swarm/base/process_secrets.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <utility>

extern char** environ;

namespace swarm {

namespace {

std::mutex g_mu;
// The credentials taken out of the environment, in the order they were there.
std::vector<std::pair<std::string, std::string>> g_taken;

// Where the kernel's copy of the environment this process started with
// lies, as /proc/self/stat says it (fields 50 and 51: env_start, env_end):
// what /proc/PID/environ shows, whatever setenv and unsetenv did since.
// {0, 0} when it cannot be told.
std::pair<std::uintptr_t, std::uintptr_t> initial_environment_block() {
  const int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {0, 0};
  std::string text;
  char buffer[1024];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  const auto paren = text.rfind(')');  // the command's name before it may hold anything
  if (paren == std::string::npos) return {0, 0};
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  std::uintptr_t start = 0, end = 0;
  for (int n = 3; n <= 51 && fields >> field; ++n) {
    if (n == 50) start = std::strtoull(field.c_str(), nullptr, 10);
    if (n == 51) end = std::strtoull(field.c_str(), nullptr, 10);
  }
  return start < end ? std::pair(start, end) : std::pair<std::uintptr_t, std::uintptr_t>(0, 0);
}

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

void make_undumpable() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

bool is_credential_variable(std::string_view name) {
  return name.rfind("NATS_", 0) == 0 || name.rfind("SWARM_HUB_", 0) == 0 || name == "SWARM_SESSION";
}

void take_credentials_from_environment() {
  std::lock_guard lock(g_mu);
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> taken;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = name_of(entry);
    if (!is_credential_variable(name) || name.size() == entry.size()) continue;
    // The first of a name is the one getenv gave.
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.emplace_back(name);
      taken.emplace_back(std::string(name), std::string(entry.substr(name.size() + 1)));
    }
  }
  // A name taken again (set since an earlier call) has its new value.
  std::erase_if(g_taken, [&](const auto& held) {
    return std::find(names.begin(), names.end(), held.first) != names.end();
  });
  g_taken.insert(g_taken.end(), taken.begin(), taken.end());
  for (const auto& name : names) ::unsetenv(name.c_str());
  // unsetenv only takes the pointers out of `environ`: the strings of the
  // initial block stay where /proc/PID/environ reads them. Every credential
  // there is zeroed (one unset before, too), none of them in use any more.
  const auto [start, end] = initial_environment_block();
  for (char* at = reinterpret_cast<char*>(start); at < reinterpret_cast<char*>(end);) {
    const std::size_t length = ::strnlen(at, static_cast<std::size_t>(reinterpret_cast<char*>(end) - at));
    const std::string_view entry(at, length);
    if (is_credential_variable(name_of(entry)) && name_of(entry).size() < entry.size()) std::memset(at, 0, length);
    at += length + 1;
  }
}

std::optional<std::string> environment_value(const char* name) {
  if (const char* value = std::getenv(name); value != nullptr) return std::string(value);
  std::lock_guard lock(g_mu);
  for (const auto& [held, value] : g_taken)
    if (held == name) return value;
  return std::nullopt;
}

std::vector<std::string> child_environment(bool (*withhold)(std::string_view name)) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (withhold == nullptr || !withhold(name_of(*e))) out.emplace_back(*e);
  std::lock_guard lock(g_mu);
  for (const auto& [name, value] : g_taken) {
    if (withhold != nullptr && withhold(name)) continue;
    if (std::getenv(name.c_str()) != nullptr) continue;  // set again since: that value stands
    out.push_back(name + "=" + value);
  }
  return out;
}

}  // namespace swarm
