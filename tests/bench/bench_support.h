// What every benchmark case measures with: wall-clock samples and their
// percentiles, a row of the result table, whole processes timed (and their
// peak memory), and tmpfs folders of generated files.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start);

struct Stats {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};

Stats stats_of(std::vector<double> samples);

// One line of the table (and one case of the JSON document).
struct Row {
  std::string name;
  std::string unit = "ms";
  Stats swarm;
  Stats baseline;
  bool has_baseline = true;
  double ratio_p50 = 0, ratio_p99 = 0;
  std::string target;
  bool met = false;
  std::string note;
};

// The ratios to the baseline, and whether the p50 ratio is within `limit`.
void finish(Row& row, double limit);

// Ends the benchmark with exit 1: a measurement that cannot be trusted.
[[noreturn]] void fail(const std::string& what);

struct ProcessSample {
  double ms;
  long max_rss_kb;
  int exit;
};

// fork/exec/wait4: wall time and the child's peak resident memory.
ProcessSample run_process(const std::vector<std::string>& args, const std::vector<std::string>& env_extra,
                          const std::string& cwd = {});

// Peak RSS of a command in KiB, read by /usr/bin/time: a child forked from
// this (large) benchmark would count our pages in its ru_maxrss before exec.
long peak_rss_kb(const std::vector<std::string>& args, const std::vector<std::string>& env_extra, int also_ok = 0);

// A folder on tmpfs (/dev/shm) for the file-heavy cases: the disk's noise
// would hide the CPU and syscall work. Removed when it goes.
struct ShmDir {
  std::filesystem::path path;
  ShmDir();
  ~ShmDir();
  ShmDir(const ShmDir&) = delete;
  ShmDir& operator=(const ShmDir&) = delete;
};

// Writes `files` text files of about `bytes` each under `root`, 100 to a
// folder, two levels deep, with varied words (compresses like source code).
void write_tree(const std::filesystem::path& root, int files, int bytes);

}  // namespace bench
