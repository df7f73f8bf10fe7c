// The checker of a partition run's marks: every command run under the lease
// wrote a start and an end mark with its fencing token; it wants tokens that
// only grow, no two holders at once unless the older was cut off and fenced,
// and no acknowledged grant lost by the stream.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "faults/partition_network.h"

namespace partition {

// A command's start or end as its mark says; `end_ns` 0 until an end mark.
struct Run {
  unsigned long long token = 0;
  long long start_ns = 0;
  long long end_ns = 0;
  std::string side;
  std::string pid;
  bool by_term = false;
};

struct CutWindow {
  int node = 0;
  long long cut_ns = 0;
  long long heal_ns = 0;
  bool meta = false;  // it isolated the metadata leader (else the lease stream's)
};

struct Verdict {
  std::vector<Run> runs;  // by start time
  int without_end = 0;
  int malformed_marks = 0;
  int backwards = 0;
  int unfenced = 0;
  int fenced = 0;
  int lost = 0;
  unsigned long long highest_token = 0;
  int acked_writes = 0;   // acknowledged by the server, all writers
  int lost_writes = 0;    // acknowledged, and missing from the key at the end or on a reread
  int cuts_of_meta = 0;   // cuts that isolated the metadata leader
  std::optional<unsigned long long> last_revision;
  std::vector<std::string> notes;
};

// Pairs the marks (start TOKEN TIME_NS SIDE PID / end TOKEN TIME_NS SIDE PID done|term)
// by side, pid and token; a run without an end lasts until `run_end_ns`.
std::vector<Run> runs_from_marks(const std::filesystem::path& marks, long long run_end_ns, Verdict& verdict);

// (a) Ordered by start, every token is higher than every earlier one.
void check_tokens_grow(Verdict& v, long long origin);

// (b) Two runs at once only when the later holds the higher token and the
// earlier was cut off: a fenced resource refuses its writes.
void check_overlaps(Verdict& v, const std::vector<CutWindow>& cuts, long long origin);

// (c) The key's last revision is at least the highest token any run started with.
void check_nothing_lost(Verdict& v, const Names& names);

// Runs that started while a node was cut off: on the majority side (which
// must elect a new stream leader first) and on the cut-off node's own side
// (which must get none: it has no quorum).
std::pair<int, int> runs_during_cuts(const std::vector<Run>& runs, const std::vector<CutWindow>& cuts);

}  // namespace partition
