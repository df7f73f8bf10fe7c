// Timing, percentiles, timed processes and generated file trees for the
// benchmark cases (bench_support.h).
#include "bench/bench_support.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "support/temp_dir.h"

namespace bench {

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Stats stats_of(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    auto i = static_cast<std::size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
    return samples[std::min(i, samples.size() - 1)];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = samples.back();
  s.n = samples.size();
  return s;
}

void finish(Row& row, double limit) {
  if (row.has_baseline) {
    row.ratio_p50 = row.swarm.p50 / row.baseline.p50;
    row.ratio_p99 = row.swarm.p99 / row.baseline.p99;
    row.met = row.ratio_p50 <= limit;
  }
}

void fail(const std::string& what) {
  std::cerr << "swarm_bench: " << what << std::endl;
  std::exit(1);
}

ProcessSample run_process(const std::vector<std::string>& args, const std::vector<std::string>& env_extra,
                          const std::string& cwd) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.push_back(*e);
  for (const auto& e : env_extra) env_strings.push_back(e);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {ms_since(start), usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128};
}

long peak_rss_kb(const std::vector<std::string>& args, const std::vector<std::string>& env_extra, int also_ok) {
  testing::TempDir tmp("swarm-rss");
  std::string out = (tmp.path() / "rss").string();
  std::vector<std::string> timed = {"/usr/bin/time", "-f", "%M", "-o", out};
  timed.insert(timed.end(), args.begin(), args.end());
  auto s = run_process(timed, env_extra);
  if (s.exit != 0 && s.exit != also_ok) fail("measuring " + args[0] + " failed");
  // GNU time puts "Command exited with non-zero status N" before the format's line.
  std::string text = testing::read_file(out);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return std::stol(text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
}

ShmDir::ShmDir() {
  std::string templ = "/dev/shm/swarm-bench-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) fail("cannot make a folder in /dev/shm");
  path = templ;
}

ShmDir::~ShmDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void write_tree(const std::filesystem::path& root, int files, int bytes) {
  static const char* words[] = {"alpha", "render", "tile", "queue", "lease", "token", "commit", "branch",
                                "session", "worker", "buffer", "stream", "index", "value", "return", "struct"};
  std::uint64_t seed = 88172645463325252ULL;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  for (int i = 0; i < files; ++i) {
    auto dir = root / ("mod" + std::to_string(i / 1000)) / ("pkg" + std::to_string((i / 100) % 10));
    if (i % 100 == 0) std::filesystem::create_directories(dir);
    std::string text;
    text.reserve(static_cast<size_t>(bytes) + 64);
    while (static_cast<int>(text.size()) < bytes) {
      text += words[next() % 16];
      text += (next() % 8 == 0) ? "\n" : " ";
      if (next() % 5 == 0) text += std::to_string(next() % 100000);
    }
    std::ofstream(dir / ("file" + std::to_string(i) + ".txt"), std::ios::binary) << text << "\n";
  }
}

}  // namespace bench
