// Stop signals, pauses and tool runs of the partition runner (partition_support.h).
#include "faults/partition_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace partition {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int signo) {
  g_stop_signal = signo;
  std::signal(signo, SIG_DFL);
}

void throw_if_interrupted() {
  if (g_stop_signal != 0) throw Interrupted("interrupted by signal " + std::to_string(g_stop_signal));
}

void pause_for(std::chrono::milliseconds length) {
  auto until = std::chrono::steady_clock::now() + length;
  while (std::chrono::steady_clock::now() < until) {
    throw_if_interrupted();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(), 100ms));
  }
}

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return (fs::path(dir) / program).string();
  throw SetupFailed(program + " is not on PATH");
}

testing::RunResult run_tool(std::vector<std::string> args, std::chrono::milliseconds limit) {
  args[0] = on_path(args[0]);
  testing::Command c;
  c.args = std::move(args);
  return testing::run(c, limit);
}

void must(const std::vector<std::string>& args) {
  auto r = run_tool(args);
  if (r.exit == 0) return;
  std::string line;
  for (const auto& a : args) line += a + " ";
  throw SetupFailed(line + "failed (" + std::to_string(r.exit) + "): " + trimmed(r.err));
}

std::string server_version() {
  auto said = trimmed(run_tool({"nats-server", "--version"}).out);
  auto v = said.find(" v");
  return v == std::string::npos ? said : said.substr(v + 1);
}

}  // namespace partition
