// Waiting on processes a test started: gone (or a zombie), and the first
// line a command wrote to a file (its pid, say).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/eventually.h"
#include "support/process.h"

namespace testing {

// Gone, or a zombie no longer running (its reaper may be slow in a container).
inline bool process_gone(pid_t pid) {
  const char state = process_state(pid);
  return state == '\0' || state == 'Z' || state == 'X';
}

// The first line of `path` once it has one; empty after `limit`.
inline std::string first_line_of(const std::filesystem::path& path,
                                 std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  std::string line;
  eventually(
      [&] {
        std::ifstream in(path);
        return std::getline(in, line) && !line.empty();
      },
      limit);
  return line;
}

}  // namespace testing
