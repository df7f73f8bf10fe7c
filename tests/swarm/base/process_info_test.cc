// Whose socket listens on a port: a port that answers may be another
// process's, taken between choosing it and binding it.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/nats_server.h"
#include "swarm/base/process_info.h"

using namespace swarm;

TEST_CASE("ProcessInfo_ListensOnNamesTheProcessWhoseSocketListens") {
  // this process's listener is its own; a nats-server's port is the server's, not ours; a stopped one listens nowhere.
  testing::SilentListener mine;
  testing::NatsServer server;
  CHECK(listens_on(getpid(), mine.port()) == true);
  CHECK(listens_on(server.pid(), server.port()) == true);
  CHECK(listens_on(getpid(), server.port()) == false);
  CHECK(listens_on(server.pid(), mine.port()) == false);
  const pid_t gone = server.pid();
  const int port = server.port();
  server.stop();
  CHECK(listens_on(gone, port) == false);
  CHECK(listens_on(getpid(), 0) == false);
  CHECK(listens_on(0, mine.port()) == false);
}

TEST_CASE("ProcessInfo_AServerBeatenToItsPortIsNotTakenForTheOneThatListens") {
  // a second server started on a port another already holds exits: that is PortTaken, never "it listens".
  testing::NatsServer first;
  testing::TempDir dir{"swarm-port-taken"};
  CHECK_THROWS_AS(testing::start_server({"nats-server", "-js", "-a", "127.0.0.1", "-p", std::to_string(first.port()),
                                         "-sd", (dir.path() / "store").string()},
                                        dir.path() / "server.log", first.port()),
                  testing::PortTaken);
}

TEST_CASE("ProcessInfo_AProcessEndingWhileItIsReadIsGoneNotAnError") {
  // race: /proc of processes that end while they are read (a busy machine's lock run) gives "gone", never an
  // exception: 2 s of reading every process while short-lived ones come and go.
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop) {
      pid_t pid = fork();
      if (pid == 0) _exit(0);
      if (pid > 0) waitpid(pid, nullptr, 0);
    }
  });
  int reads = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < until) {
    for (pid_t pid : swarm::all_processes()) {
      CHECK_NOTHROW(swarm::process_start_ticks(pid));
      CHECK_NOTHROW(swarm::process_parent(pid));
      CHECK_NOTHROW(swarm::process_arguments(pid));
      CHECK_NOTHROW(swarm::process_is(pid, 1));
      ++reads;
    }
  }
  stop = true;
  churn.join();
  CHECK(reads > 100);
}
