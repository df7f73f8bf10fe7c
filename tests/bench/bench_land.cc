// Benchmark cases of landing: `swarm land` of a one-file change into a
// 20,200-file repository against the same merge and push with the git CLI
// (a fast-forward, and a merge commit), and 32 finished slots landed by one
// `land --ready` against 32 sequential merges and pushes with the git CLI.
#include <utility>

#include "bench/bench_cases.h"
#include "support/temp_dir.h"

namespace bench {
namespace {

std::pair<swarm::UpResult, std::vector<std::string>> land_workspace(Bench& b, const std::filesystem::path& root,
                                                                    const std::string& bucket) {
  auto made = swarm::up({.root = root, .nats_url = b.server.url(), .bucket = bucket, .connection = {}});
  std::vector<std::string> env = {"SWARM_WORKSPACE=" + root.string(), "SWARM_HOST=bench-host",
                                  "SWARM_HOST_ID=bench-id"};
  return std::make_pair(std::move(made), std::move(env));
}

// Runs `script` in `cwd`; a failure ends the benchmark with what it said on stderr.
void sh(const std::string& script, const std::filesystem::path& cwd, const char* what) {
  testing::TempDir tmp("swarm-bench-sh");
  const auto err = tmp.path() / "err";
  if (run_process({"/bin/sh", "-c", "{ " + script + "; } 2>" + err.string()}, {}, cwd.string()).exit != 0)
    fail(std::string(what) + ": " + testing::read_file(err));
}

const std::string kGit = "git -c user.name=bench -c user.email=bench@bench ";

}  // namespace

// 20. land of a one-file change into 20,200 files (tmpfs): swarm against
// git fetch + merge + push in a clone of a copy of the hub.
void land_big_repository(Bench& b) {
  ShmDir shm;
  const auto root = shm.path / "ws";
  write_tree(root, 20200, 4400);
  sh("git init -q -b main && git add -A && " + kGit + "commit -q -m tree", root, "making the big repository failed");
  const auto [ws, env] = land_workspace(b, root, "bench-land");
  const auto hub = ws.workspace.hub_dir();
  const auto copy = shm.path / "copy.git";   // the baseline's hub: the same history
  const auto work = shm.path / "work";       // where the changes are made
  const auto clone = shm.path / "clone";     // the baseline's clone (20,200 files checked out)
  sh("git clone -q --bare " + hub.string() + " " + copy.string() + " && git clone -q " + hub.string() + " " +
         work.string() + " && git clone -q " + copy.string() + " " + clone.string(),
     shm.path, "cloning the big hub failed");
  sh("git remote add copy " + copy.string(), work, "git remote add failed");
  const int n = b.quick ? 4 : 10;
  for (bool merge : {false, true}) {
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n; ++i) {
      const std::string slot = std::string(merge ? "m" : "f") + std::to_string(i);
      // The slot's commit: on main's tip (a fast-forward: the same commits in
      // both hubs), or on the first commit, which main has left (a merge).
      const std::string start = merge ? "$(git rev-list --max-parents=0 origin/main)" : "origin/main";
      std::string script = "git fetch -q origin main && git checkout -q -B " + slot + " " + start + " && echo " + slot +
                           " > " + slot + ".txt && git add " + slot + ".txt && " + kGit + "commit -q -m " + slot +
                           " && git push -q origin " + slot + ":refs/heads/swarm/" + slot + " && git push -q copy " +
                           slot + ":refs/heads/swarm/" + slot;
      sh(script, work, "making the slot's change failed");
      auto s = run_process({b.swarm_bin, "land", "--slot", slot}, env);
      if (s.exit != 0) fail("swarm land failed");
      swarm_ms.push_back(s.ms);
      sh("git pull -q --ff-only origin main", clone, "syncing the baseline clone failed");
      auto base = run_process({"/bin/sh", "-c",
                               "git fetch -q origin swarm/" + slot + " && " + kGit +
                                   "merge -q --no-edit FETCH_HEAD && git push -q origin HEAD:main"},
                              {}, clone.string());
      if (base.exit != 0) fail("git CLI merge and push failed");
      base_ms.push_back(base.ms);
    }
    Row row{.name = std::string("land, 20,200 files, ") + (merge ? "merge commit" : "fast-forward"),
            .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = "<= 1.2x git CLI"};
    finish(row, 1.2);
    row.note = std::to_string(n) + " lands of a one-file change (tmpfs), whole processes; baseline: git fetch + "
               "merge + push in a clone of a copy of the hub";
    b.rows.push_back(row);
  }
}

// 21. 32 finished slots landed by one `land --ready` (each a merge commit
// but the first), against 32 sequential git fetch + merge + push.
void land_ready_queue(Bench& b) {
  ShmDir shm;
  const auto root = shm.path / "ws";
  write_tree(root, 2000, 2000);
  sh("git init -q -b main && git add -A && " + kGit + "commit -q -m tree", root, "making the repository failed");
  const auto [ws, env] = land_workspace(b, root, "bench-ready");
  const auto copy = shm.path / "copy.git";
  const auto clone = shm.path / "clone";
  const int slots = 32;
  for (int i = 0; i < slots; ++i) {
    const std::string slot = "r" + std::to_string(i);
    if (run_process({b.swarm_bin, "join", "--slot", slot, "--task", "T-" + slot}, env).exit != 0) fail("join failed");
    testing::write_file(ws.workspace.worktree(slot) / (slot + ".txt"), slot + "\n");
    if (run_process({b.swarm_bin, "commit", "--slot", slot, "-m", slot}, env).exit != 0) fail("commit failed");
    if (run_process({b.swarm_bin, "close", "--slot", slot, "--result", "success"}, env).exit != 0) fail("close failed");
  }
  sh("git clone -q --bare " + ws.workspace.hub_dir().string() + " " + copy.string() + " && git clone -q " +
         copy.string() + " " + clone.string(),
     shm.path, "cloning the hub failed");
  auto s = run_process({b.swarm_bin, "land", "--ready"}, env);
  if (s.exit != 0) fail("swarm land --ready failed");
  std::string script = "set -e";
  for (int i = 0; i < slots; ++i)
    script += "; git fetch -q origin swarm/r" + std::to_string(i) + " && " + kGit +
              "merge -q --no-edit FETCH_HEAD && git push -q origin HEAD:main";
  auto base = run_process({"/bin/sh", "-c", script}, {}, clone.string());
  if (base.exit != 0) fail("32 git CLI merges failed");
  Row all{.name = "land --ready, 32 slots (all)", .swarm = stats_of({s.ms}), .baseline = stats_of({base.ms}),
          .target = "report"};
  finish(all, 1e9);
  all.note = "one process landing 32 finished slots (2,000 files); baseline: 32 sequential git fetch + merge + push";
  b.rows.push_back(all);
  Row per{.name = "land --ready, per land", .swarm = stats_of({s.ms / slots}), .baseline = stats_of({base.ms / slots}),
          .target = "<= 1.2x git CLI"};
  finish(per, 1.2);
  per.note = "the row above divided by 32";
  b.rows.push_back(per);
}

}  // namespace bench
