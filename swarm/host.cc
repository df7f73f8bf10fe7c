#include "swarm/host.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace swarm {

namespace {

std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::filesystem::path config_dir() {
  if (auto xdg = env("XDG_CONFIG_HOME"); !xdg.empty()) return std::filesystem::path(xdg) / "swarm";
  if (auto home = env("HOME"); !home.empty()) return std::filesystem::path(home) / ".config" / "swarm";
  return std::filesystem::temp_directory_path() / "swarm-config";
}

std::string generated_id() {
  auto path = config_dir() / "host-id";
  if (auto kept = first_line(path); !kept.empty()) return kept;
  std::random_device random;
  std::string id;
  const char* digits = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += digits[random() % 16];
  std::error_code ignored;
  std::filesystem::create_directories(path.parent_path(), ignored);
  std::ofstream(path) << id << "\n";
  return id;
}

}  // namespace

HostIdentity HostIdentity::detect() {
  HostIdentity id;
  id.host = env("SWARM_HOST");
  if (id.host.empty()) {
    char name[256] = {0};
    if (gethostname(name, sizeof name - 1) == 0) id.host = name;
    if (id.host.empty()) id.host = "localhost";
  }
  id.host_id = env("SWARM_HOST_ID");
  if (id.host_id.empty()) id.host_id = first_line("/etc/machine-id");
  if (id.host_id.empty()) id.host_id = first_line("/var/lib/dbus/machine-id");
  if (id.host_id.empty()) id.host_id = generated_id();
  return id;
}

bool HostIdentity::owns(const Session& session) const {
  if (session.host != host) return false;
  return session.host_id.empty() || session.host_id == host_id;
}

}  // namespace swarm
