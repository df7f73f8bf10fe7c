// Runs programs as real processes for tests: exit code, stdout, stderr, time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace testing {

struct RunResult {
  int exit = -1;  // 128 + signal when killed by one
  std::string out;
  std::string err;
  std::chrono::milliseconds took{0};
};

struct Command {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // added to the test's environment; "" unsets
  std::filesystem::path cwd;               // empty: the test's
};

// A started process; wait() collects its output.
class Process {
 public:
  explicit Process(const Command& command);
  ~Process();
  Process(Process&&) noexcept;
  Process(const Process&) = delete;
  RunResult wait(std::chrono::milliseconds limit = std::chrono::seconds(60));
  // The next line of stdout (without its newline), or nullopt after `limit`
  // or at end of output. Lines read here are not in wait()'s result.
  std::optional<std::string> read_line(std::chrono::milliseconds limit);
  void signal(int signo);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::chrono::steady_clock::time_point started_;
  std::string pending_;  // stdout read by read_line beyond its last line
};

// The state letter /proc/PID/stat gives process `pid` ('R', 'S', 'T' when
// stopped, 'Z' a zombie not yet reaped, ...); '\0' when there is none.
char process_state(pid_t pid);

RunResult run(const Command& command, std::chrono::milliseconds limit = std::chrono::seconds(60));

}  // namespace testing
