// One agent cannot stall the rest: each way an agent (or any client holding
// the workspace's credential) could once keep every other agent from
// working, tried with the fault planted, and what the others still do.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "e2e/process_wait.h"
#include "e2e/swarm_fixture.h"
#include "kv/bucket.h"
#include "kv/connection.h"
#include "kv/object_store.h"
#include "kv/stream.h"
#include "support/eventually.h"
#include "support/temp_dir.h"

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string task_state(SwarmWorkspace& ws, const std::string& id) {
  auto shown = ws.swarm({"task", "show", id, "--json"});
  return shown.exit == 0 ? field(json_of(shown), "state") : "";
}

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(gen() & 0xff);
  return out;
}

std::string sha256_of(const fs::path& file) {
  auto r = run(Command{{"/usr/bin/sha256sum", file.string()}, {}, {}});
  REQUIRE(r.exit == 0);
  return r.out.substr(0, 64);
}

}  // namespace

TEST_CASE("Stall_AQueueWhoseHintsAreDeletedInALoopStillHandsOutItsTasks") {
  // A client deletes every _ready.*/_working.* hint and plants a _scanned key as fast as it can; three
  // join --next still claim the three ready tasks, one each, none twice: the records are the truth.
  SwarmWorkspace ws;
  for (const char* title : {"A", "B", "C"}) REQUIRE(ws.swarm({"task", "add", title}).exit == 0);
  std::atomic<bool> stop{false};
  std::atomic<int> deleted{0};
  std::thread vandal([&] {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto tasks = kv::Bucket::open(nats, ws.names().tasks);
    while (!stop) {
      for (const auto& key : tasks.keys())
        if (key.rfind("_ready.", 0) == 0 || key.rfind("_working.", 0) == 0) {
          try {
            tasks.remove_hint(key);
            ++deleted;
          } catch (const kv::Error&) {
          }
        }
      try {
        tasks.put_hint("_scanned", "{\"at\":9999999999999,\"ready\":0}");
      } catch (const kv::Error&) {
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  std::set<std::string> claimed;
  for (const char* slot : {"w1", "w2", "w3"}) {
    auto joined = ws.swarm({"join", "--slot", slot, "--next", "--json"});
    CAPTURE(joined.err);
    CHECK(joined.exit == 0);
    if (joined.exit == 0) claimed.insert(field(json_of(joined), "task_id"));
  }
  stop = true;
  vandal.join();
  CHECK(deleted > 0);
  CHECK(claimed == std::set<std::string>{"T-1", "T-2", "T-3"});
  auto none = ws.swarm({"join", "--slot", "w4", "--next"});
  CHECK(none.exit == 4);
  CHECK(none.err.find("no ready task") != std::string::npos);
}

TEST_CASE("Stall_AKilledRunsTaskIsClaimedAtOnceMostUrgentFirst") {
  // TTL 1m. A run SIGKILLed on this host leaves its task working under a claim nobody renews: the next
  // join --next of this host claims it at once (attempt 2), before a less urgent ready task, without
  // waiting a minute for the claim to expire.
  SwarmWorkspace ws({.up_args = {"--ttl", "1m"}});
  REQUIRE(ws.swarm({"task", "add", "later", "--priority", "3"}).exit == 0);
  REQUIRE(ws.swarm({"task", "add", "urgent", "--priority", "1"}).exit == 0);
  const fs::path pid_file = ws.root() / "agent.pid";
  Process run(ws.command({"run", "--slot", "a", "--task", "T-2", "--", "sh", "-c",
                          "echo $$ > " + pid_file.string() + "; sleep 60"}));
  const std::string pid = first_line_of(pid_file);
  REQUIRE(!pid.empty());
  REQUIRE(task_state(ws, "T-2") == "working");
  run.signal(SIGKILL);
  run.wait(5s);
  REQUIRE(eventually([&] { return process_gone(static_cast<pid_t>(std::stol(pid))); }, 5s));
  auto joined = ws.swarm({"join", "--slot", "b", "--next", "--json"});
  CAPTURE(joined.err);
  REQUIRE(joined.exit == 0);
  CHECK(field(json_of(joined), "task_id") == "T-2");
  auto shown = json_of(ws.swarm({"task", "show", "T-2", "--json"}));
  CHECK(field(shown, "slot") == "b");
  CHECK(number(shown, "attempts") == 1);  // one attempt before this one
  CHECK(task_state(ws, "T-1") == "open");
}

TEST_CASE("Stall_AClaimWhoseLeaseIsGoneIsSaidByDoctorAndClaimedAgain") {
  // A working task's task lease deleted behind swarm's back (its agent gone with it): doctor says
  // [lapsed_claim] naming the task, a notice; the next join --next claims it.
  SwarmWorkspace ws({.up_args = {"--ttl", "1m"}});
  REQUIRE(ws.swarm({"task", "add", "lost"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "T-1"}).exit == 0);
  {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto leases = kv::Bucket::open(nats, ws.names().leases);
    int removed = 0;
    for (const auto& key : leases.keys())
      if (key.find("T-1") != std::string::npos) {
        leases.remove_hint(key);
        ++removed;
      }
    REQUIRE(removed == 1);
  }
  auto doctor = ws.swarm({"doctor"});
  CAPTURE(doctor.out);
  CHECK(doctor.out.find("[lapsed_claim] task T-1 is working for slot a") != std::string::npos);
  CHECK(doctor.out.find("its task lease is gone") != std::string::npos);
  auto joined = ws.swarm({"join", "--slot", "b", "--next", "--json"});
  CAPTURE(joined.err);
  REQUIRE(joined.exit == 0);
  CHECK(field(json_of(joined), "task_id") == "T-1");
  CHECK(ws.swarm({"doctor"}).out.find("[lapsed_claim]") == std::string::npos);
}

TEST_CASE("Stall_AFullBlobStoreRefusesPutsAndEveryoneElseGoesOn") {
  // A blob store of 4 MiB: 1 MiB puts until one is refused (exit 9, naming the store); every blob stored is
  // still whole, and others' joins, renews, task adds and sends all still work.
  SwarmWorkspace ws({.up_args = {"--blob-store-max-bytes", "4MiB"}});
  REQUIRE(ws.swarm({"join", "--slot", "other", "--task", "X-1"}).exit == 0);
  std::vector<std::pair<fs::path, std::string>> stored;
  RunResult refused;
  for (int i = 0; i < 8; ++i) {
    const fs::path file = ws.home() / ("big" + std::to_string(i) + ".bin");
    write_file(file, random_bytes(1 << 20, 100 + i));
    refused = ws.swarm({"blob", "put", file.string()});
    if (refused.exit != 0) break;
    stored.emplace_back(file, refused.out.substr(0, 64));
  }
  CAPTURE(refused.err);
  REQUIRE(refused.exit == 9);
  CHECK(refused.err.find("the blob store (") != std::string::npos);
  CHECK(refused.err.find("is full, so nothing was stored") != std::string::npos);
  CHECK(stored.size() >= 2);
  CHECK(stored.size() <= 4);
  for (const auto& [file, sha] : stored) {
    const fs::path out = ws.home() / (sha + ".got");
    CHECK(ws.swarm({"blob", "get", sha, "-o", out.string()}).exit == 0);
    CHECK(read_file(out) == read_file(file));
  }
  CHECK(ws.swarm({"renew", "--slot", "other"}).exit == 0);
  CHECK(ws.swarm({"join", "--slot", "another", "--task", "X-2"}).exit == 0);
  CHECK(ws.swarm({"task", "add", "still works"}).exit == 0);
  CHECK(ws.swarm({"send", "--to", "other", "--from", "lead", "still works"}).exit == 0);
}

TEST_CASE("Stall_AnObjectPlantedUnderAFilesDigestIsWrittenOverByItsPut") {
  // Another client stores other bytes of the same size under a file's SHA-256: the put of that file does not
  // take the planted object for its own; it writes the file over it, and blob get gives the file back.
  SwarmWorkspace ws;
  const fs::path file = ws.home() / "report.txt";
  write_file(file, random_bytes(300 * 1024, 7));
  const std::string sha = sha256_of(file);
  {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto store = kv::ObjectStore::bind(nats, ws.names().blobs);
    const std::string lie = random_bytes(300 * 1024, 8);
    std::size_t at = 0;
    store.put(sha, [&](char* into, std::size_t room) {
      const std::size_t n = std::min(room, lie.size() - at);
      std::copy_n(lie.data() + at, n, into);
      at += n;
      return n;
    });
  }
  const fs::path before = ws.home() / "before.got";
  CHECK(ws.swarm({"blob", "get", sha, "-o", before.string()}).exit == 3);  // its digest is not its name
  auto put = ws.swarm({"blob", "put", file.string()});
  CAPTURE(put.err);
  REQUIRE(put.exit == 0);
  CHECK(put.out == sha + "\n");
  const fs::path out = ws.home() / "report.got";
  auto got = ws.swarm({"blob", "get", sha, "-o", out.string()});
  CAPTURE(got.err);
  REQUIRE(got.exit == 0);
  CHECK(read_file(out) == read_file(file));
  // And the planted object's chunks are gone with it: nothing is left over.
  CHECK(ws.swarm({"doctor"}).out.find("[blob_leftover]") == std::string::npos);
}

TEST_CASE("Stall_ACursorPlantedPastTheBusIsReadFromItsStart") {
  // a's cursor rewritten to 2^53-1: a's next read still gives its unread messages (a cursor past the bus's
  // last message is read as none), doctor says [inbox_cursor] (a problem, exit 8), --fix removes the
  // cursor, and a's acks move it again.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "one"}).exit == 0);
  REQUIRE(ws.swarm({"ack", "--as", "a", "1"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "two"}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "a", "--from", "lead", "three"}).exit == 0);
  rewrite_the_cursor(ws, "\"seq\":1\\b", "\"seq\":9007199254740991");
  auto read = ws.swarm({"inbox", "--as", "a"});
  CAPTURE(read.err);
  CHECK(read.exit == 0);
  CHECK(read.out.find("two") != std::string::npos);  // read from the start (the acked one left the bus)
  CHECK(read.out.find("three") != std::string::npos);
  CHECK(read.err.find("past the bus's last message (3)") != std::string::npos);
  auto doctor = ws.swarm({"doctor"});
  CAPTURE(doctor.out);
  CHECK(doctor.exit == 8);
  CHECK(doctor.out.find("[inbox_cursor] ") != std::string::npos);
  auto fixed = ws.swarm({"doctor", "--fix"});
  CAPTURE(fixed.out);
  CHECK(fixed.exit == 0);
  CHECK(ws.swarm({"doctor"}).out.find("[inbox_cursor]") == std::string::npos);
  CHECK(ws.swarm({"ack", "--as", "a", "2"}).exit == 0);
  auto after = ws.swarm({"inbox", "--as", "a"});
  CHECK(after.out.find("two") == std::string::npos);
  CHECK(after.out.find("three") != std::string::npos);
  // An ack past the bus's last message is refused: it would skip what comes.
  auto past = ws.swarm({"ack", "--as", "a", "99"});
  CHECK(past.exit == 2);
  CHECK(past.err.find("no message 99 on the bus yet") != std::string::npos);
}

TEST_CASE("Stall_AHoldOfTheWholeTreeIsRefusedUnlessForced") {
  // hold '**' would stand in every other slot's way while its session lives: refused (exit 2, naming it)
  // unless --force; a hold naming paths is taken as ever.
  SwarmWorkspace ws;
  REQUIRE(ws.swarm({"join", "--slot", "a", "--task", "X-1"}).exit == 0);
  REQUIRE(ws.swarm({"join", "--slot", "b", "--task", "X-2"}).exit == 0);
  for (const char* whole : {"**", "*/**"}) {
    auto refused = ws.swarm({"hold", "--slot", "a", whole});
    CAPTURE(whole);
    CHECK(refused.exit == 2);
    CHECK(refused.err.find("holds the whole tree") != std::string::npos);
  }
  CHECK(ws.swarm({"holds", "--json"}).out.find("\"slot\":\"a\"") == std::string::npos);  // nothing taken
  CHECK(ws.swarm({"hold", "--slot", "b", "src/**"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "a", "**", "--force"}).exit == 3);  // b holds src/**: a conflict, as ever
  CHECK(ws.swarm({"hold", "--slot", "b", "--release", "--all"}).exit == 0);
  CHECK(ws.swarm({"hold", "--slot", "a", "**", "--force"}).exit == 0);
}

TEST_CASE("Stall_OneAgentMisbehavingEveryWayAtOnceStopsNoOne") {
  // TTL 3 s, a bus of 1 MiB and a blob store of 4 MiB. While one client deletes every queue hint in a loop,
  // floods the bus and fills the blob store, three `swarm run --next` agents each claim a task, keep their
  // sessions through 4 s of work (renewals under the flood), commit and close: the three tasks approved,
  // one each; a message sent before the flood is still read.
  SwarmWorkspace ws({.up_args = {"--ttl", "3s", "--bus-max-bytes", "1MiB", "--blob-store-max-bytes", "4MiB"}});
  for (const char* title : {"A", "B", "C"}) REQUIRE(ws.swarm({"task", "add", title}).exit == 0);
  REQUIRE(ws.swarm({"send", "--to", "lead", "--from", "a", "sent before the flood"}).exit == 0);
  std::atomic<bool> stop{false};
  std::atomic<int> hints_deleted{0}, bus_refused{0}, blobs_refused{0};
  std::thread vandal([&] {
    auto nats = kv::Connection::connect({.urls = {ws.server()->url()}});
    auto tasks = kv::Bucket::open(nats, ws.names().tasks);
    auto bus = kv::Stream::bind(nats, ws.names().bus);
    auto blobs = kv::ObjectStore::bind(nats, ws.names().blobs);
    const std::string flood(100 * 1024, 'f');
    for (int round = 0; !stop; ++round) {
      for (const auto& key : tasks.keys())
        if (key.rfind("_ready.", 0) == 0 || key.rfind("_working.", 0) == 0) try {
            tasks.remove_hint(key);
            ++hints_deleted;
          } catch (const kv::Error&) {
          }
      try {
        bus.publish(ws.names().bus_root + ws.names().sessions + ".to.victim", flood, "flood-" + std::to_string(round));
      } catch (const kv::Error&) {
        ++bus_refused;
      }
      try {
        const std::string junk = random_bytes(512 * 1024, static_cast<unsigned>(round));
        std::size_t at = 0;
        blobs.put("junk-" + std::to_string(round), [&](char* into, std::size_t room) {
          const std::size_t n = std::min(room, junk.size() - at);
          std::copy_n(junk.data() + at, n, into);
          at += n;
          return n;
        });
      } catch (const kv::Error&) {
        ++blobs_refused;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  std::vector<std::unique_ptr<Process>> agents;
  for (const char* slot : {"w1", "w2", "w3"})
    agents.push_back(std::make_unique<Process>(ws.command(
        {"run", "--slot", slot, "--next", "--commit", std::string("work of ") + slot, "--", "sh", "-c",
         "sleep 4; echo \"$SWARM_SLOT\" > done.txt"})));
  std::vector<RunResult> ended;
  for (auto& agent : agents) ended.push_back(agent->wait(60s));
  auto read = ws.swarm({"inbox", "--as", "lead"});
  stop = true;
  vandal.join();
  for (const auto& r : ended) {
    CAPTURE(r.err);
    CHECK(r.exit == 0);
  }
  CHECK(hints_deleted > 0);
  CHECK(bus_refused > 0);    // the flood met the bus's limit ...
  CHECK(blobs_refused > 0);  // ... and the blob store's
  CHECK(read.out.find("sent before the flood") != std::string::npos);
  std::set<std::string> slots;
  for (const std::string id : {"T-1", "T-2", "T-3"}) {
    auto shown = json_of(ws.swarm({"task", "show", id, "--json"}));
    CAPTURE(id);
    CHECK(field(shown, "state") == "approved");  // done, its head waiting to land
    slots.insert(field(shown, "slot"));
  }
  CHECK(slots == std::set<std::string>{"w1", "w2", "w3"});
}
