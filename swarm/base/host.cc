#include "swarm/base/host.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"

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

// The folder that holds swarm/host-id: the user's own config folder, never a
// shared one such as /tmp, where another user could plant a link first.
std::filesystem::path config_home() {
  if (auto xdg = env("XDG_CONFIG_HOME"); !xdg.empty()) return xdg;
  std::string home = env("HOME");
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  if (home.empty() || home == "/")
    throw Error(Errc::bad_input, "this host has no machine id (/etc/machine-id) and this user no home folder to keep "
                                 "a generated one in; set SWARM_HOST_ID to a name that is this host's alone");
  return std::filesystem::path(home) / ".config";
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
  if (id.host_id.empty()) id.host_id = generated_host_id(config_home());
  return id;
}

std::string generated_host_id(const std::filesystem::path& config_home) {
  std::error_code ignored;
  std::filesystem::create_directories(config_home, ignored);
  // Read and written without following a link: a planted one would make
  // swarm publish the first line of whatever it names as its host id.
  SafeDir dir = SafeDir::make(config_home / "swarm", 0700);
  auto kept = [&]() -> std::string {
    std::string why;
    std::string text = dir.read_file("host-id", 256, &why).value_or("");
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    return line;
  };
  if (std::string id = kept(); !id.empty()) return id;
  std::random_device random;
  std::string id;
  const char* digits = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += digits[random() % 16];
  if (dir.kind("host-id") == EntryKind::missing) {
    if (dir.create_file("host-id", id + "\n", 0600)) return id;
    if (std::string first = kept(); !first.empty()) return first;  // another process was first: its id holds
  }
  dir.write_file("host-id", id + "\n", 0600);  // replaces a link or an empty file, never writes through it
  return id;
}

bool HostIdentity::owns(std::string_view record_host, std::string_view record_host_id) const {
  if (record_host != host) return false;
  return record_host_id.empty() || record_host_id == host_id;
}

}  // namespace swarm
