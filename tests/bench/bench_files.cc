// Benchmark cases of the work in files: a commit against the git CLI, a join
// of a big repository against git clone, a close that salvages many untracked
// files against cp + rm, and a long run of commits to one hub.
#include <thread>
#include <utility>

#include "bench/bench_cases.h"
#include "support/temp_dir.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/slots/session_store.h"

using namespace std::chrono_literals;

namespace bench {
namespace {

// A workspace in `root` on the bench's server, and the environment its
// swarm processes run with (this host as the bench's).
std::pair<swarm::UpResult, std::vector<std::string>> workspace_at(Bench& b, const std::filesystem::path& root,
                                                                  const std::string& bucket) {
  std::filesystem::create_directories(root);
  auto made = swarm::up({.root = root, .nats_url = b.server.url(), .bucket = bucket, .connection = {}});
  std::vector<std::string> env = {"SWARM_WORKSPACE=" + root.string(), "SWARM_HOST=bench-host",
                                  "SWARM_HOST_ID=bench-id"};
  return std::make_pair(std::move(made), std::move(env));
}

}  // namespace

// 4. `swarm commit` of one small file against git add/commit/push with the git CLI.
void commit_small_file(Bench& b) {
  swarm::SlotLifecycle life(b.up.workspace, b.up.config, swarm::SessionStore::open(b.nats, b.up.config.bucket),
                            swarm::LeaseStore::open(b.nats, b.up.config.names()), {"bench-host", "bench-id"});
  const std::vector<std::string> as_bench_host = {b.ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
  auto join = run_process({b.swarm_bin, "join", "--slot", "commit", "--task", "T-commit"}, as_bench_host);
  if (join.exit != 0) fail("join for commit failed");
  auto wt = b.up.workspace.worktree("commit");
  auto bare = b.dir.path() / "bare.git";
  auto clone = b.dir.path() / "clone";
  run_process({"/usr/bin/git", "init", "-q", "--bare", bare.string()}, {});
  run_process({"/usr/bin/git", "clone", "-q", bare.string(), clone.string()}, {});
  run_process({"/usr/bin/git", "-C", clone.string(), "config", "user.name", "bench"}, {});
  run_process({"/usr/bin/git", "-C", clone.string(), "config", "user.email", "bench@bench"}, {});
  int n = b.quick ? 10 : 40;
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    testing::write_file(wt / "file.txt", "change " + std::to_string(i) + "\n");
    auto s = run_process({b.swarm_bin, "commit", "--slot", "commit", "-m", "change " + std::to_string(i)},
                         as_bench_host);
    if (s.exit != 0) fail("swarm commit failed");
    swarm_ms.push_back(s.ms);
    testing::write_file(clone / "file.txt", "change " + std::to_string(i) + "\n");
    auto base = run_process({"/bin/sh", "-c", "git add -A && git commit -q -m 'change " + std::to_string(i) +
                                                  "' && git push -q origin HEAD:refs/heads/work"},
                            {}, clone.string());
    if (base.exit != 0) fail("git CLI commit failed");
    base_ms.push_back(base.ms);
  }
  Row row{.name = "swarm commit (one small file)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.0x"};
  finish(row, 1.0);
  row.note = "baseline: sh -c 'git add -A && git commit && git push' to a bare repo";
  b.rows.push_back(row);
}

// 12. join of a slot in a repository of 20,200 files (about 88 MB) on
// tmpfs, against `git clone` of the hub; and at 100,000 files (reported).
void join_big_repository(Bench& b) {
  for (int files : b.quick ? std::vector<int>{20200} : std::vector<int>{20200, 100000}) {
    ShmDir shm;
    const auto root = shm.path / "ws";
    write_tree(root, files, 4400);
    if (run_process({"/bin/sh", "-c", "git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b "
                                      "commit -q -m tree"},
                    {}, root.string())
            .exit != 0)
      fail("making the big repository failed");
    const auto [big, env] = workspace_at(b, root, "bench-big");
    const int n = files > 20200 ? 3 : b.quick ? 4 : 10;
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n; ++i) {
      const std::string slot = "big" + std::to_string(i);
      auto s = run_process({b.swarm_bin, "join", "--slot", slot, "--task", "T-" + slot}, env);
      if (s.exit != 0) fail("swarm join of the big repository failed");
      swarm_ms.push_back(s.ms);
      run_process({b.swarm_bin, "close", "--slot", slot, "--result", "fail"}, env);
      const auto clone = shm.path / ("clone" + std::to_string(i));
      auto base = run_process({"/usr/bin/git", "clone", "-q", big.workspace.hub_dir().string(), clone.string()}, {});
      if (base.exit != 0) fail("git clone of the big hub failed");
      base_ms.push_back(base.ms);
      std::filesystem::remove_all(clone);
    }
    Row row{.name = "join, " + std::to_string(files) + " files (tmpfs)", .swarm = stats_of(swarm_ms),
            .baseline = stats_of(base_ms), .target = files > 20200 ? "report" : "<= 1.2x git clone"};
    finish(row, files > 20200 ? 1e9 : 1.2);
    row.note = std::to_string(n) + " joins, each a new slot; baseline: git clone -q of the hub; whole processes";
    b.rows.push_back(row);
  }
}

// 13. close --result fail of a slot with 10,000 untracked files (tmpfs),
// against `cp -a` of the same files and `rm -rf` of them; and 100,000 (reported).
void close_untracked_files(Bench& b) {
  for (int files : b.quick ? std::vector<int>{10000} : std::vector<int>{10000, 100000}) {
    ShmDir shm;
    const auto root = shm.path / "ws";
    const auto [small, env] = workspace_at(b, root, "bench-close");
    const int n = files > 10000 ? 3 : b.quick ? 4 : 10;
    std::vector<double> swarm_ms, base_ms;
    for (int i = 0; i < n; ++i) {
      if (run_process({b.swarm_bin, "join", "--slot", "c", "--task", "T-c"}, env).exit != 0) fail("join failed");
      write_tree(small.workspace.worktree("c") / "untracked", files, 500);
      auto s = run_process({b.swarm_bin, "close", "--slot", "c", "--result", "fail"}, env);
      if (s.exit != 0) fail("swarm close failed");
      swarm_ms.push_back(s.ms);
      std::filesystem::remove_all(small.workspace.recovery_dir());
      const auto from = shm.path / "from";
      write_tree(from, files, 500);
      auto base = run_process({"/bin/sh", "-c", "cp -a from kept && rm -rf from"}, {}, shm.path.string());
      if (base.exit != 0) fail("cp -a + rm -rf failed");
      base_ms.push_back(base.ms);
      std::filesystem::remove_all(shm.path / "kept");
    }
    Row row{.name = "close --result fail, " + std::to_string(files) + " files", .swarm = stats_of(swarm_ms),
            .baseline = stats_of(base_ms), .target = files > 10000 ? "report" : "<= 1.0x cp -a + rm -rf"};
    finish(row, files > 10000 ? 1e9 : 1.0);
    row.note = std::to_string(n) + " closes of untracked files (tmpfs); baseline: sh -c 'cp -a from kept && rm -rf "
               "from' on the same number of files";
    b.rows.push_back(row);
  }
}

// 16. A long run of commits to a local hub (tmpfs): the commits around the
// last one against those around the 10th, and the hub's packs at the end.
void long_commit_run(Bench& b) {
  ShmDir shm;
  const auto root = shm.path / "ws";
  const auto [ws16, env] = workspace_at(b, root, "bench-commits");
  if (run_process({b.swarm_bin, "join", "--slot", "long", "--task", "T-long"}, env).exit != 0) fail("join failed");
  const int n = b.quick ? 200 : 1000;
  std::vector<double> all;
  for (int i = 0; i < n; ++i) {
    testing::write_file(ws16.workspace.worktree("long") / ("f" + std::to_string(i % 50) + ".txt"),
                        "change " + std::to_string(i) + "\n");
    auto s = run_process({b.swarm_bin, "commit", "--slot", "long", "-m", "change " + std::to_string(i)}, env);
    if (s.exit != 0) fail("commit failed");
    all.push_back(s.ms);
  }
  std::this_thread::sleep_for(2s);  // a repack started by the last commits
  int packs = 0;
  for (const auto& e : std::filesystem::directory_iterator(ws16.workspace.hub_dir() / "objects" / "pack"))
    packs += e.path().extension() == ".pack" ? 1 : 0;
  std::vector<double> early(all.begin(), all.begin() + 20), late(all.end() - 20, all.end());
  Row row{.name = "commit #" + std::to_string(n) + " vs #10", .swarm = stats_of(late), .baseline = stats_of(early),
          .target = "<= 1.1x, <= 50 packs"};
  finish(row, 1.1);
  row.met = row.met && packs <= 50;
  row.note = std::to_string(n) + " commits to one local hub: the last 20 against commits 1-20; hub packs at the end: " +
             std::to_string(packs);
  b.rows.push_back(row);
}

}  // namespace bench
