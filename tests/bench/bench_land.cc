// Benchmark cases of landing: `swarm land` of a one-file change into a
// 20,200-file repository against the same merge and push with the git CLI
// (a fast-forward, and a merge commit), and 32 finished slots landed by one
// `land --ready` against 32 sequential merges and pushes with the git CLI.
#include <utility>

#include "bench/bench_cases.h"
#include "support/temp_dir.h"

namespace bench {
namespace {

// Runs `script` in `cwd`; a failure ends the benchmark with what it said on stderr.
void sh(const std::string& script, const std::filesystem::path& cwd, const char* what) {
  testing::TempDir tmp("swarm-bench-sh");
  const auto err = tmp.path() / "err";
  if (run_process({"/bin/sh", "-c", "{ " + script + "; } 2>" + err.string()}, {}, cwd.string()).exit != 0)
    fail(std::string(what) + ": " + testing::read_file(err));
}

const std::string kGit = "git -c user.name=bench -c user.email=bench@bench ";

// A git repository of `files` files of about `bytes` each in `shm`'s "ws",
// one commit on main, made a workspace (its buckets named after `bucket`):
// the workspace, and the environment its verbs run with.
std::pair<swarm::UpResult, std::vector<std::string>> land_workspace(Bench& b, const ShmDir& shm, int files, int bytes,
                                                                    const std::string& bucket) {
  const auto root = shm.path / "ws";
  write_tree(root, files, bytes);
  sh("git init -q -b main && git add -A && " + kGit + "commit -q -m tree", root,
     ("making the repository of " + std::to_string(files) + " files failed").c_str());
  auto made = swarm::up({.root = root, .nats_url = b.server.url(), .bucket = bucket, .connection = {}});
  std::vector<std::string> env = {"SWARM_WORKSPACE=" + root.string(), "SWARM_HOST=bench-host",
                                  "SWARM_HOST_ID=bench-id"};
  return std::make_pair(std::move(made), std::move(env));
}

// The fleet's slots r0..r<n-1>, each adding its own file, joined, committed
// and closed as agents do.
void finish_slots(Bench& b, const swarm::UpResult& ws, const std::vector<std::string>& env, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string slot = "r" + std::to_string(i);
    if (run_process({b.swarm_bin, "join", "--slot", slot, "--task", "T-" + slot}, env).exit != 0) fail("join failed");
    testing::write_file(ws.workspace.worktree(slot) / (slot + ".txt"), slot + "\n");
    if (run_process({b.swarm_bin, "commit", "--slot", slot, "-m", slot}, env).exit != 0) fail("commit failed");
    if (run_process({b.swarm_bin, "close", "--slot", slot, "--result", "success"}, env).exit != 0) fail("close failed");
  }
}

}  // namespace

// 20. land of a one-file change into 20,200 files (tmpfs): swarm against
// git fetch + merge + push in a clone of a copy of the hub.
void land_big_repository(Bench& b) {
  ShmDir shm;
  const auto [ws, env] = land_workspace(b, shm, 20200, 4400, "bench-land");
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
      // --force: the branch was pushed by git, never closed by a session, so the land guards refuse it.
      auto s = run_process({b.swarm_bin, "land", "--slot", slot, "--force"}, env);
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
  const auto [ws, env] = land_workspace(b, shm, 2000, 2000, "bench-ready");
  const auto copy = shm.path / "copy.git";
  const auto clone = shm.path / "clone";
  const int slots = 32;
  finish_slots(b, ws, env, slots);
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

// 23. 32 ready slots with a 1 s check: `land --ready --batch 8` against one
// at a time (the floor: 32 checks), and again with 2 culprits among them.
// Each run lands on its own branch made at main's tip.
void land_batches(Bench& b) {
  ShmDir shm;
  const auto [ws, env] = land_workspace(b, shm, 2000, 2000, "bench-batch");
  const int slots = b.quick ? 8 : 32;
  finish_slots(b, ws, env, slots);
  const std::string hub = ws.workspace.hub_dir().string();
  sh("git --git-dir " + hub + " branch one main && git --git-dir " + hub + " branch batch main && git --git-dir " +
         hub + " branch culprits main",
     shm.path, "making the onto branches failed");
  // A 1 s check; on `culprits`, it fails when r5's or r20's file is in the tree.
  const std::vector<std::string> check = {
      "--", "/bin/sh", "-c",
      "sleep 1; [ \"$SWARM_LAND_ONTO\" != culprits ] || ! ls r5.txt r20.txt 2>/dev/null | grep -q ."};
  auto land = [&](const std::string& onto, std::vector<std::string> extra, int want_exit) {
    std::vector<std::string> args = {b.swarm_bin, "land", "--ready", "--onto", onto};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), check.begin(), check.end());
    auto r = run_process(args, env);
    if (r.exit != want_exit) fail("land --ready --onto " + onto + " exited " + std::to_string(r.exit));
    return r.ms;
  };
  const double one = land("one", {}, 0);
  const double batch = land("batch", {"--batch", "8"}, 0);
  const double culprits = land("culprits", {"--batch", "8"}, 3);  // r5 is among even the quick run's 8
  Row clean{.name = "land --ready --batch 8, " + std::to_string(slots) + " slots, 1 s check",
            .swarm = stats_of({batch}), .baseline = stats_of({one}), .target = "<= 0.3x one at a time"};
  finish(clean, 0.3);
  clean.note = "one process; baseline: the same slots landed one at a time (a check each)";
  b.rows.push_back(clean);
  Row bad{.name = "land --ready --batch 8, 2 culprits", .swarm = stats_of({culprits}), .baseline = stats_of({one}),
          .target = "<= 0.6x one at a time"};
  finish(bad, 0.6);
  bad.note = "r5 and r20 fail the check: bisected, only they refused";
  b.rows.push_back(bad);
}

// 24. Conflicts foreseen: 50 unlanded branches each changing 5 files of a
// 20,000-file repository (each shares a file with the next): `swarm
// branches` against git merge-tree of the pairs that share a file and of
// each branch with main; one commit's check against the 49 and main (from
// its log) against git merge-tree of its two overlaps.
void foresee_conflicts(Bench& b) {
  ShmDir shm;
  const auto [ws, env] = land_workspace(b, shm, 20000, 400, "bench-foresee");
  const std::string hub = ws.workspace.hub_dir().string();
  const auto work = shm.path / "work";
  const int branches = 50;
  std::string script = "git clone -q " + hub + " " + work.string() + " && cd " + work.string() +
                       " && git ls-files > ../files && set -e";
  for (int i = 0; i < branches; ++i) {
    script += " && git checkout -q -B b" + std::to_string(i) + " origin/main";
    for (int k = 0; k < 5; ++k)
      script += " && echo b" + std::to_string(i) + " >> \"$(sed -n " + std::to_string(i * 4 + k + 1) + "p ../files)\"";
    script += " && " + kGit + "commit -q -am b" + std::to_string(i) + " && git push -q origin b" + std::to_string(i) +
              ":refs/heads/swarm/b" + std::to_string(i);
  }
  sh(script, shm.path, "making the 50 branches failed");
  const int n = b.quick ? 2 : 5;
  std::string floor = "set -e; cd " + work.string();
  for (int i = 0; i < branches; ++i) {
    const std::string me = "origin/swarm/b" + std::to_string(i);
    floor += "; git merge-tree --write-tree --name-only --no-messages origin/main " + me + " >/dev/null || true";
    if (i + 1 < branches)
      floor += "; git merge-tree --write-tree --name-only --no-messages " + me + " origin/swarm/b" +
               std::to_string(i + 1) + " >/dev/null || true";
  }
  sh("cd " + work.string() + " && git fetch -q origin", shm.path, "fetching the branches failed");
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    auto s = run_process({b.swarm_bin, "branches", "--json"}, env);
    if (s.exit != 0) fail("swarm branches failed");
    swarm_ms.push_back(s.ms);
    auto base = run_process({"/bin/sh", "-c", floor}, {});
    if (base.exit != 0) fail("git merge-tree failed");
    base_ms.push_back(base.ms);
  }
  Row table{.name = "branches, 50 unlanded branches, 20,000 files", .swarm = stats_of(swarm_ms),
            .baseline = stats_of(base_ms), .target = "< 1000 ms"};
  finish(table, 1e9);
  table.met = table.swarm.max < 1000;
  table.note = std::to_string(n) + " runs; baseline: git merge-tree of the 49 pairs that share a file and of each "
               "branch with main";
  b.rows.push_back(table);

  // One agent's commit touching b0's first file: its check from its own log line.
  if (run_process({b.swarm_bin, "join", "--slot", "agent", "--task", "T-agent"}, env).exit != 0) fail("join failed");
  std::vector<double> check_ms, pair_ms;
  for (int i = 0; i < n; ++i) {
    sh("echo agent" + std::to_string(i) + " >> \"$(sed -n 1p " + (shm.path / "files").string() + ")\"",
       ws.workspace.worktree("agent"), "changing a file failed");
    testing::TempDir tmp("swarm-bench-commit");
    const auto err = tmp.path() / "err";
    auto c = run_process({"/bin/sh", "-c",
                          b.swarm_bin + " --log-level info commit --slot agent -m agent 2>" + err.string()},
                         env);
    if (c.exit != 0) fail("commit failed: " + testing::read_file(err));
    const std::string said = testing::read_file(err);
    const auto at = said.find("foreseen: ");
    const auto in = said.find(" in ", at);
    if (at == std::string::npos || in == std::string::npos) fail("commit said no foresight: " + said);
    check_ms.push_back(std::stod(said.substr(in + 4)));
    auto base = run_process({"/bin/sh", "-c",
                             "cd " + work.string() + " && git fetch -q origin && git merge-tree --write-tree "
                             "--name-only --no-messages origin/swarm/agent origin/swarm/b0 >/dev/null; git merge-tree "
                             "--write-tree --name-only --no-messages origin/main origin/swarm/agent >/dev/null; true"},
                            {});
    pair_ms.push_back(base.ms);
  }
  Row commit{.name = "commit's foresight, 49 branches + main", .swarm = stats_of(check_ms),
             .baseline = stats_of(pair_ms), .target = "< 100 ms"};
  finish(commit, 1e9);
  commit.met = commit.swarm.max < 100;
  commit.note = "inside `swarm commit` (its log); baseline: git fetch + merge-tree of its 2 overlaps";
  b.rows.push_back(commit);
}

}  // namespace bench
