// The library's warnings go to the sink the program gives: here, a wait
// for another process's hold on a slot's folder, said while it waits.
#include "swarm/base/warnings.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "support/temp_dir.h"
#include "swarm/slots/folder.h"
#include "swarm/workspace/workspace.h"

using namespace swarm;
using namespace std::chrono_literals;

TEST_CASE("Warnings_GoToTheSinkTheProgramGives") {
  testing::TempDir dir{"swarm-warn"};
  Workspace ws = Workspace::at(dir.path() / "ws");
  std::filesystem::create_directories(ws.swarm_dir());
  std::mutex mu;
  std::vector<std::string> said;
  set_warning_sink([&](const std::string& message) {
    std::lock_guard lock(mu);
    said.push_back(message);
  });
  {
    std::optional<FileLock> held = lock_slot(ws, "a", "a test holding the slot");
    std::thread other([&] { FileLock second = lock_slot(ws, "a", "a second test"); });  // waits, and says so
    std::this_thread::sleep_for(300ms);
    held.reset();
    other.join();
  }
  set_warning_sink({});  // the default again, for the tests after
  std::lock_guard lock(mu);
  REQUIRE(said.size() == 1);
  CHECK(said[0].find("slot a: waiting for another swarm process to finish with its folder") == 0);
}
