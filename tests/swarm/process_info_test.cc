// Whose socket listens on a port: a port that answers may be another
// process's, taken between choosing it and binding it.
#include <doctest/doctest.h>
#include <unistd.h>

#include "support/nats_server.h"
#include "swarm/process_info.h"

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
