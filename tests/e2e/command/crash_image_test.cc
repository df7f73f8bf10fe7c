// A crash of the store's machine, on a real disk (adr/0052): the whole
// workspace on an ext4 file system in a loop device, its image copied right
// after the acknowledgements (what the file system had sent to its device:
// what a power cut leaves), then mounted in its place and the workspace
// started again on it. On a server that syncs every write (the embedded
// default, 2.10 and later) nothing acknowledged is lost: tasks, claims,
// sessions, messages and their sequence numbers, cursors, blobs, holds,
// leases and the journal; on 2.9 (about once a minute) only the tokens are
// promised, and held. Needs root and loop devices; without them it says so
// and skips (scripts/crash-image.sh runs it bounded, many times).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/swarm_fixture.h"
#include "kv/connection.h"
#include "support/temp_dir.h"

using namespace testing;
namespace fs = std::filesystem;

namespace {

RunResult sh(const std::string& script) { return run({{"/bin/sh", "-c", script}}, std::chrono::seconds(120)); }

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// An ext4 file system of its own, in a file, mounted through a loop device.
class LoopDisk {
 public:
  LoopDisk() : dir_("swarm-disk") {
    fs::create_directory(mount_point());
    const auto made = sh("truncate -s 768M " + quoted(image()) + " && mkfs.ext4 -q -F " + quoted(image()) +
                         " && mount -o loop " + quoted(image()) + " " + quoted(mount_point()));
    ok_ = made.exit == 0;
    why_ = made.out + made.err;
  }
  ~LoopDisk() {
    if (mounted()) sh("umount " + quoted(mount_point()) + " || umount -l " + quoted(mount_point()));
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  fs::path image() const { return dir_ / "disk.img"; }
  fs::path mount_point() const { return dir_ / "mnt"; }
  bool mounted() const { return sh("mountpoint -q " + quoted(mount_point())).exit == 0; }
  // The image as the device has it now (the backing file: what the file
  // system has written to its device, not what sits in its page cache).
  void copy_to(const fs::path& out) const {
    auto r = sh("cp --sparse=always " + quoted(image()) + " " + quoted(out));
    REQUIRE_MESSAGE(r.exit == 0, r.err);
  }
  // The crashed image mounted where the disk was (its journal replayed).
  void replace_with(const fs::path& crashed) {
    auto r = sh("umount " + quoted(mount_point()) + " && mount -o loop " + quoted(crashed) + " " +
                quoted(mount_point()));
    REQUIRE_MESSAGE(r.exit == 0, r.err);
  }

 private:
  TempDir dir_;
  bool ok_ = false;
  std::string why_;
};

struct Swarm {
  fs::path root;
  std::map<std::string, std::string> env = kHostA;
  RunResult operator()(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {swarm_binary()};
    all.insert(all.end(), args.begin(), args.end());
    return run({all, env, root});
  }
  swarm::Json json(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"--json"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = (*this)(all);
    REQUIRE_MESSAGE(r.exit == 0, r.err);
    return json_of(r);
  }
};

double num(const swarm::Json& doc, const char* name) { return number(doc, name); }

// The fencing token `lease acquire --json` printed.
std::uint64_t token_of(const swarm::Json& doc) {
  const cJSON* first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc.get(), "leases"), 0);
  const cJSON* token = cJSON_GetObjectItemCaseSensitive(first, "token");
  REQUIRE(cJSON_IsNumber(token));
  return static_cast<std::uint64_t>(token->valuedouble);
}

}  // namespace

TEST_CASE("CrashImage_NothingAcknowledgedIsLostOnTheDefault") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: a crash image needs root (a loop device): scripts/crash-image.sh runs it as root");
    return;
  }
  LoopDisk disk;
  if (!disk.ok()) {
    MESSAGE("skipped: no loop device here (" << disk.why() << "): scripts/crash-image.sh runs it where there is one");
    return;
  }
  Swarm swarm{disk.mount_point() / "ws"};
  // Whatever fails below, the server on the disk stops before the disk is
  // unmounted (destroyed first): a failed run leaves no server behind.
  struct DownAtEnd {
    const Swarm& swarm;
    ~DownAtEnd() { swarm({"down", "--force"}); }
  } down_at_end{swarm};
  fs::create_directory(swarm.root);
  auto up = swarm.json({"up"});
  const std::string sync = field(swarm::Json::copy(cJSON_GetObjectItemCaseSensitive(up.get(), "server")), "sync");
  const bool durable = sync == "always";
  // In a leg on 2.10 or later the default syncs every write: a server that
  // did not would be this test's failure, not its weaker branch.
  if (const char* leg = std::getenv("SWARM_NATS_LEG"); leg != nullptr && *leg != '\0') {
    const std::string version = leg[0] == 'v' ? leg + 1 : leg;
    if (!kv::version_before(version, 2, 10)) REQUIRE_MESSAGE(durable, "the embedded server syncs: " << sync);
  }
  // Acknowledged writes of every kind, each one's answer kept.
  std::vector<std::string> tasks;
  for (int i = 0; i < 6; ++i) tasks.push_back(field(swarm.json({"task", "add", "task " + std::to_string(i)}), "id"));
  auto s1 = swarm.json({"join", "--slot", "s1", "--next"});
  auto s2 = swarm.json({"join", "--slot", "s2", "--next"});
  const std::string t1 = field(s1, "task_id"), t2 = field(s2, "task_id");
  std::set<std::uint64_t> seqs;
  for (int i = 0; i < 4; ++i)
    seqs.insert(static_cast<std::uint64_t>(num(swarm.json({"send", "--from", "s1", "--to", "s2", "m" + std::to_string(i)}), "seq")));
  // s2 reads and acks the first two.
  REQUIRE(swarm({"inbox", "--as", "s2", "-n", "2", "--ack"}).exit == 0);
  fs::path file = swarm.root / "payload.bin";
  { std::ofstream(file) << std::string(300000, 'x') << "end"; }
  auto put = swarm({"blob", "put", file.string()});
  REQUIRE_MESSAGE(put.exit == 0, put.err);
  const std::string blob = put.out.substr(0, put.out.find_first_of(" \n"));
  REQUIRE(swarm({"hold", "--slot", "s1", "src/api/**"}).exit == 0);
  // A commit the hub acknowledged.
  { std::ofstream(fs::path(field(s1, "worktree")) / "done.txt") << "done\n"; }
  auto commit = swarm({"commit", "--slot", "s1", "-m", "before the crash"});
  REQUIRE_MESSAGE(commit.exit == 0, commit.err);
  const fs::path hub = swarm.root / ".swarm" / "hub.git";
  auto tip = sh("git --git-dir " + quoted(hub) + " rev-parse refs/heads/swarm/s1");
  REQUIRE(tip.exit == 0);
  auto lease = swarm.json({"lease", "acquire", "crash-l", "--ttl", "1h", "--pid", std::to_string(::getpid())});
  const auto token = token_of(lease);
  const auto events_before = swarm({"--json", "log", "-n", "100000"});
  REQUIRE(events_before.exit == 0);
  std::set<std::string> events_acked;
  {
    std::istringstream lines(events_before.out);
    for (std::string line; std::getline(lines, line);) events_acked.insert(line);
  }
  // The power cut: the device's image now; then the server stopped and the
  // disk replaced by that image.
  const fs::path crashed = disk.image().string() + ".crashed";
  disk.copy_to(crashed);
  REQUIRE(swarm({"down", "--force"}).exit == 0);
  disk.replace_with(crashed);
  auto again = swarm({"up"});
  REQUIRE_MESSAGE(again.exit == 0, again.err);

  // Tokens never go back, on every server.
  auto next = swarm.json({"lease", "acquire", "crash-next", "--pid", std::to_string(::getpid())});
  CHECK(token_of(next) > token);
  const auto session_tokens = static_cast<std::uint64_t>(std::max(num(s1, "session_token"), num(s2, "session_token")));
  if (!durable) {
    // What a crash lost here is the server's to lose; a new session's token
    // is still past every one handed out.
    auto listed = swarm({"task", "list"});
    MESSAGE("nats-server syncs by interval here (" << sync << "): only tokens are promised across a crash; tasks "
            "left of 6: " << std::count(listed.out.begin(), listed.out.end(), '\n'));
    REQUIRE(swarm({"task", "add", "after the crash"}).exit == 0);
    auto s3 = swarm({"--json", "join", "--slot", "s3", "--next"});
    REQUIRE_MESSAGE(s3.exit == 0, s3.err);
    CHECK(static_cast<std::uint64_t>(num(json_of(s3), "session_token")) > session_tokens);
    swarm({"down", "--force"});
    return;
  }
  auto s3 = swarm({"--json", "join", "--slot", "s3", "--next"});
  REQUIRE_MESSAGE(s3.exit == 0, s3.err << swarm({"task", "list"}).out << swarm({"status"}).out);
  CHECK(static_cast<std::uint64_t>(num(json_of(s3), "session_token")) > session_tokens);
  // Every task, and each claim with its slot: no claim handed out twice.
  const std::string third = field(json_of(s3), "task_id");
  CHECK(third != t1);
  CHECK(third != t2);
  CHECK(std::find(tasks.begin(), tasks.end(), third) != tasks.end());
  auto list = swarm({"--json", "task", "list"});
  REQUIRE(list.exit == 0);
  for (const auto& id : tasks) CHECK_MESSAGE(list.out.find("\"id\":\"" + id + "\"") != std::string::npos, id);
  auto status = swarm({"--json", "status"});
  for (const char* slot : {"s1", "s2"}) CHECK_MESSAGE(status.out.find(std::string("\"slot\":\"") + slot) != std::string::npos, slot);
  auto lt1 = swarm({"--json", "lease", "show", "task." + t1});
  CHECK(lt1.out.find("\"holder\":\"s1\"") != std::string::npos);
  // The unread messages, the cursor past the read ones, and no sequence
  // number handed out again.
  auto inbox = swarm({"--json", "inbox", "--as", "s2"});
  REQUIRE(inbox.exit == 0);
  CHECK(std::count(inbox.out.begin(), inbox.out.end(), '\n') == 2);
  CHECK(inbox.out.find("\"m2\"") != std::string::npos);
  CHECK(inbox.out.find("\"m3\"") != std::string::npos);
  auto sent = swarm.json({"send", "--from", "s1", "--to", "s2", "after"});
  CHECK(static_cast<std::uint64_t>(num(sent, "seq")) > *seqs.rbegin());
  // The blob, the hold, the lease, the journal.
  auto got = swarm({"blob", "get", blob, "-o", (swarm.root / "back.bin").string()});
  CHECK_MESSAGE(got.exit == 0, got.err);
  CHECK(fs::file_size(swarm.root / "back.bin") == 300003);  // the test's own payload.bin was never synced
  auto tip_after = sh("git --git-dir " + quoted(hub) + " rev-parse refs/heads/swarm/s1");
  CHECK(tip_after.out == tip.out);
  auto fsck = sh("git --git-dir " + quoted(hub) + " fsck --no-dangling 2>&1");
  CHECK_MESSAGE(fsck.exit == 0, fsck.out);
  auto holds = swarm({"holds"});
  CHECK(holds.out.find("src/api/**") != std::string::npos);
  auto held = swarm({"--json", "lease", "show", "crash-l"});
  CHECK(held.out.find("\"token\":" + std::to_string(token)) != std::string::npos);
  // Every event journaled before the crash, as it was.
  const auto events_after = swarm({"--json", "log", "-n", "100000"});
  std::set<std::string> events_kept;
  {
    std::istringstream lines(events_after.out);
    for (std::string line; std::getline(lines, line);) events_kept.insert(line);
  }
  for (const auto& line : events_acked) CHECK_MESSAGE(events_kept.count(line) == 1, line);
  swarm({"down", "--force"});
}
