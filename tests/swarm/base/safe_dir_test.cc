// SafeDir: folders of .swarm/ reached through descriptors, never through a
// link, against a real filesystem with the links planted.
#include "swarm/base/safe_dir.h"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

#include "support/temp_dir.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/slots/folder.h"
#include "swarm/workspace/workspace.h"

using namespace swarm;
using testing::read_file;
using testing::write_file;
namespace fs = std::filesystem;

namespace {

Errc kind_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.kind();
  }
  return Errc::internal;  // nothing thrown: no kind
}

}  // namespace

TEST_CASE("SafeDir_ALinkWhereAFolderShouldBeIsRefusedNamingIt") {
  // opening a folder, or a file in it, never goes through a link: bad_input naming the path.
  testing::TempDir dir{"swarm-safedir"};
  write_file(dir / "elsewhere/file.txt", "x\n");
  fs::create_directory(dir / "kept");
  fs::create_directory_symlink(dir / "elsewhere", dir / "kept/link");
  SafeDir kept = SafeDir::open(dir / "kept");
  CHECK(kind_of([&] { kept.folder("link"); }) == Errc::bad_input);
  CHECK(kind_of([&] { SafeDir::open(dir / "kept/link"); }) == Errc::bad_input);
  CHECK(kind_of([&] { kept.folder_below("link/x", false); }) == Errc::bad_input);
  try {
    kept.folder("link");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find((dir / "kept/link").string()) != std::string::npos);
  }
  CHECK(kept.kind("link") == EntryKind::link);
  CHECK(kept.kind("nothing") == EntryKind::missing);
  std::string why;
  fs::create_symlink(dir / "elsewhere/file.txt", dir / "kept/file-link");
  CHECK_FALSE(kept.read_file("file-link", 100, &why));
  CHECK(why.find("symbolic link") != std::string::npos);
  CHECK(kind_of([&] { kept.open_file("file-link"); }) == Errc::bad_input);
}

TEST_CASE("SafeDir_WritesReplaceALinkAndNeverWriteThroughIt") {
  // write_file puts a new file where a link was: the file the link named keeps its bytes.
  testing::TempDir dir{"swarm-safedir"};
  write_file(dir / "target.txt", "precious\n");
  fs::create_directory(dir / "kept");
  fs::create_symlink(dir / "target.txt", dir / "kept/crumb");
  SafeDir kept = SafeDir::open(dir / "kept");
  kept.write_file("crumb", "ours\n", 0600);
  CHECK(read_file(dir / "target.txt") == "precious\n");
  CHECK_FALSE(fs::is_symlink(dir / "kept/crumb"));
  CHECK(read_file(dir / "kept/crumb") == "ours\n");
  struct stat st {};
  REQUIRE(::stat((dir / "kept/crumb").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  // create_file never replaces anything, link or not.
  fs::create_symlink(dir / "target.txt", dir / "kept/other");
  CHECK_FALSE(kept.create_file("other", "x"));
  CHECK(read_file(dir / "target.txt") == "precious\n");
}

TEST_CASE("SafeDir_RemoveTreeDeletesLinksNotWhatTheyName") {
  // a tree with links to folders and files elsewhere: the links go, their targets stay.
  testing::TempDir dir{"swarm-safedir"};
  write_file(dir / "elsewhere/a.txt", "a\n");
  write_file(dir / "kept/doomed/deep/b.txt", "b\n");
  fs::create_directory_symlink(dir / "elsewhere", dir / "kept/doomed/to-folder");
  fs::create_symlink(dir / "elsewhere/a.txt", dir / "kept/doomed/deep/to-file");
  SafeDir kept = SafeDir::open(dir / "kept");
  kept.remove_tree("doomed");
  CHECK_FALSE(fs::exists(dir / "kept/doomed"));
  CHECK(read_file(dir / "elsewhere/a.txt") == "a\n");
  kept.remove_tree("doomed");  // gone already: nothing to do
  // A link itself passed to remove_tree is removed as a link.
  fs::create_directory_symlink(dir / "elsewhere", dir / "kept/alias");
  kept.remove_tree("alias");
  CHECK(read_file(dir / "elsewhere/a.txt") == "a\n");
}

TEST_CASE("SafeDir_AWideTreeIsRemovedOnTwoThreadsNeverThroughALink") {
  // a tree wide enough to be split between two threads (40 folders, three levels), with links to an outside
  // folder planted at every level, a link where a folder of the frontier was, and a subfolder swapped for a
  // link and back while it is removed: all of the tree goes, the outside folder keeps its files.
  testing::TempDir dir{"swarm-safedir"};
  write_file(dir / "outside/a.txt", "a\n");
  write_file(dir / "outside/sub/b.txt", "b\n");
  auto plant = [&] {
    for (int i = 0; i < 40; ++i) {
      const fs::path at = dir / "kept/doomed" / ("d" + std::to_string(i));
      write_file(at / "x/y/file.txt", "f\n");
      fs::create_directory_symlink(dir / "outside", at / "link");
      fs::create_directory_symlink(dir / "outside", at / "x/link");
      fs::create_directory_symlink(dir / "outside", at / "x/y/link");
    }
    fs::remove_all(dir / "kept/doomed/d7");
    fs::create_directory_symlink(dir / "outside", dir / "kept/doomed/d7");
  };
  for (int round = 0; round < 20; ++round) {
    plant();
    std::atomic<bool> stop{false};
    const fs::path swapped = dir / "kept/doomed/d3/x";
    std::thread swapper([&] {
      const fs::path aside = dir / "kept/aside";
      while (!stop) {
        if (::rename(swapped.c_str(), aside.c_str()) != 0) continue;
        ::symlink((dir / "outside").c_str(), swapped.c_str());
        ::unlink(swapped.c_str());
        ::rename(aside.c_str(), swapped.c_str());
      }
    });
    try {
      SafeDir::open(dir / "kept").remove_tree("doomed");
    } catch (const Error& e) {
      MESSAGE("round " << round << ": " << e.what());  // a folder vanishing under a swap may be refused
    }
    stop = true;
    swapper.join();
    REQUIRE(read_file(dir / "outside/a.txt") == "a\n");
    REQUIRE(read_file(dir / "outside/sub/b.txt") == "b\n");
    std::error_code ec;
    fs::remove_all(dir / "kept/aside", ec);
    SafeDir::open(dir / "kept").remove_tree("doomed");  // what a refused round left
    CHECK_FALSE(fs::exists(dir / "kept/doomed"));
  }
}

TEST_CASE("SafeDir_AnotherUsersFolderIsRefused") {
  // a folder owned by someone else is not one swarm keeps (only root can make one for the test).
  if (::geteuid() != 0) return;
  testing::TempDir dir{"swarm-safedir"};
  fs::create_directory(dir / "theirs");
  REQUIRE(::chown((dir / "theirs").c_str(), 65534, 65534) == 0);
  CHECK(kind_of([&] { SafeDir::open(dir / "theirs"); }) == Errc::bad_input);
}

TEST_CASE("SlotFolder_ASwapForALinkWhileItIsRemovedMovesNothingOutside") {
  // race: the slot folder is swapped for a link to another folder (and back) while it is salvaged and
  // removed, 200 times; the other folder never loses or gains a file.
  testing::TempDir dir{"swarm-race"};
  Workspace ws = Workspace::at(dir / "ws");
  fs::create_directories(ws.swarm_dir());
  write_file(dir / "victim/keep.txt", "keep\n");
  write_file(dir / "victim/beside.txt", "not the slot's\n");
  const fs::path slot = ws.slots_dir() / "x";
  const fs::path aside = ws.slots_dir() / "x-real";
  int removed = 0, refused = 0;
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    std::error_code ec;
    fs::remove_all(slot, ec);
    fs::remove_all(aside, ec);
    write_file(slot / "beside.txt", "the slot's file\n");
    std::atomic<bool> stop{false};
    const int pause = static_cast<int>(random() % 200);
    std::thread swapper([&] {
      while (!stop) {
        if (::rename(slot.c_str(), aside.c_str()) != 0) continue;
        ::symlink((dir / "victim").c_str(), slot.c_str());
        ::usleep(static_cast<useconds_t>(pause));
        ::unlink(slot.c_str());
        ::rename(aside.c_str(), slot.c_str());
      }
    });
    try {
      Removal r = remove_slot_folder(ws, "x", HubLocation{}, system_clock()());
      removed += r.removed ? 1 : 0;
    } catch (const Error& e) {
      CHECK_MESSAGE(e.kind() == Errc::bad_input, e.what());
      ++refused;
    }
    stop = true;
    swapper.join();
    REQUIRE(read_file(dir / "victim/keep.txt") == "keep\n");
    REQUIRE(read_file(dir / "victim/beside.txt") == "not the slot's\n");
    REQUIRE(fs::exists(dir / "victim"));
    REQUIRE_FALSE(fs::is_symlink(dir / "victim"));
    int files = 0;
    for (auto it = fs::recursive_directory_iterator(dir / "victim"); it != fs::recursive_directory_iterator(); ++it)
      files += it->is_regular_file() ? 1 : 0;
    REQUIRE(files == 2);
  }
  MESSAGE("removed " << removed << ", refused " << refused << " of 200");
  CHECK(removed + refused > 0);
}

TEST_CASE("HostIdentity_AGeneratedIdIsKeptInTheUsersOwnFolderNeverReadThroughALink") {
  // with no machine id, the kept id lives under $XDG_CONFIG_HOME/swarm (never /tmp), and a planted link is not read.
  testing::TempDir dir{"swarm-hostid"};
  write_file(dir / "secret", "root-only-line\n");
  fs::create_directories(dir / "config/swarm");
  fs::create_symlink(dir / "secret", dir / "config/swarm/host-id");
  const std::string id = generated_host_id(dir / "config");
  CHECK(id != "root-only-line");
  CHECK(id.size() == 32);
  CHECK(read_file(dir / "secret") == "root-only-line\n");
  // Kept, and read back the next time.
  fs::remove(dir / "config/swarm/host-id");
  const std::string kept = generated_host_id(dir / "config");
  CHECK(generated_host_id(dir / "config") == kept);
}
