// The checks of a partition run's marks (partition_checker.h).
#include "faults/partition_checker.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "faults/partition_cluster.h"
#include "faults/partition_support.h"

namespace fs = std::filesystem;

namespace partition {
namespace {

std::string describe(const Run& r, long long origin) {
  auto ms = [&](long long ns) { return std::to_string((ns - origin) / 1000000); };
  return r.side + " pid " + r.pid + " token " + std::to_string(r.token) + " [" + ms(r.start_ns) + " ms, " +
         (r.end_ns != 0 ? ms(r.end_ns) : "?") + " ms]";
}

// Whether the run's side (a node's looper) was cut off at some time while it ran.
bool was_cut_off(const Run& r, const std::vector<CutWindow>& cuts) {
  for (const auto& c : cuts)
    if (r.side == "n" + std::to_string(c.node) && c.cut_ns <= r.end_ns && r.start_ns <= c.heal_ns) return true;
  return false;
}

}  // namespace

std::vector<Run> runs_from_marks(const fs::path& marks, long long run_end_ns, Verdict& verdict) {
  std::map<std::string, Run> by_key;
  std::ifstream in(marks);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, how;
    Run mark;
    long long time_ns = 0;
    if (!(words >> kind >> mark.token >> time_ns >> mark.side >> mark.pid) || (kind != "start" && kind != "end")) {
      ++verdict.malformed_marks;
      verdict.notes.push_back("malformed mark: " + line);
      continue;
    }
    Run& seen = by_key.try_emplace(mark.side + " " + mark.pid + " " + std::to_string(mark.token), mark).first->second;
    if (kind == "start") seen.start_ns = time_ns;
    if (kind == "end") seen.end_ns = time_ns;
    if (kind == "end") seen.by_term = words >> how && how == "term";
  }
  std::vector<Run> runs;
  for (auto& [key, pending] : by_key) {
    if (pending.start_ns == 0) continue;  // an end whose start never made it: nothing to check
    if (pending.end_ns == 0) {
      ++verdict.without_end;
      verdict.notes.push_back("no end mark: " + describe(pending, pending.start_ns) + " (counted as running until the end)");
      pending.end_ns = run_end_ns;
    }
    runs.push_back(pending);
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.start_ns < b.start_ns; });
  return runs;
}

void check_tokens_grow(Verdict& v, long long origin) {
  const Run* highest = nullptr;
  for (const Run& r : v.runs) {
    if (highest != nullptr && r.token <= highest->token) {
      ++v.backwards;
      v.notes.push_back("token went backwards: " + describe(r, origin) + " after " + describe(*highest, origin));
    }
    if (highest == nullptr || r.token > highest->token) highest = &r;
  }
  v.highest_token = highest != nullptr ? highest->token : 0;
}

void check_overlaps(Verdict& v, const std::vector<CutWindow>& cuts, long long origin) {
  for (std::size_t i = 0; i < v.runs.size(); ++i) {
    const Run& earlier = v.runs[i];
    for (std::size_t j = i + 1; j < v.runs.size() && v.runs[j].start_ns < earlier.end_ns; ++j) {
      const Run& later = v.runs[j];
      if (later.token > earlier.token && was_cut_off(earlier, cuts)) {
        ++v.fenced;
        v.notes.push_back("fenced overlap (allowed): " + describe(earlier, origin) + " and " + describe(later, origin));
        continue;
      }
      ++v.unfenced;
      v.notes.push_back("double holder: " + describe(earlier, origin) + " and " + describe(later, origin));
    }
  }
}

void check_nothing_lost(Verdict& v, const Names& names) {
  v.last_revision = lease_last_revision(names);
  if (!v.last_revision) {
    v.lost = 1;
    v.notes.push_back("lease " + std::string(kLease) + " could not be read after healing");
  } else if (*v.last_revision < v.highest_token) {
    v.lost = 1;
    v.notes.push_back("lost grant: the key's last revision is " + std::to_string(*v.last_revision) +
                      ", but a run started with token " + std::to_string(v.highest_token));
  }
}

std::pair<int, int> runs_during_cuts(const std::vector<Run>& runs, const std::vector<CutWindow>& cuts) {
  int majority = 0, cut_side = 0;
  for (const auto& r : runs)
    for (const auto& c : cuts)
      if (c.cut_ns <= r.start_ns && r.start_ns <= c.heal_ns) {
        (r.side == "n" + std::to_string(c.node) ? cut_side : majority) += 1;
        break;
      }
  return {majority, cut_side};
}

}  // namespace partition
