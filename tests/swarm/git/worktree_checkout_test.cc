// A new slot's worktree is what `git clone` would check out: same files,
// modes, symlinks and index, written by swarm's own writer when nothing can
// change a file, and by libgit2's checkout when attributes could.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "support/process.h"
#include "support/temp_dir.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"

using namespace swarm;
namespace fs = std::filesystem;

namespace {

testing::RunResult git(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/git", "-C", dir.string(), "-c", "user.name=t", "-c", "user.email=t@t"});
  return testing::run(testing::Command{args, {{"HOME", dir.string()}}, {}});
}

// A source repository with a bit of everything git keeps, and `bulk` plain files.
fs::path make_source(const testing::TempDir& dir, int bulk) {
  fs::path src = dir / "src";
  fs::create_directories(src / "deep/a/b/c");
  REQUIRE(git(src, {"init", "-q", "-b", "main"}).exit == 0);
  testing::write_file(src / "run.sh", "#!/bin/sh\necho hi\n");
  fs::permissions(src / "run.sh", fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  testing::write_file(src / "deep/a/b/c/leaf.txt", "leaf\n");
  testing::write_file(src / "empty", "");
  testing::write_file(src / "name with spaces é.txt", "unicode\n");
  testing::write_file(src / "crlf.txt", "a\r\nb\r\n");
  fs::create_symlink("deep/a/b/c/leaf.txt", src / "link");
  fs::create_symlink("/nowhere/at/all", src / "dangling");
  for (int i = 0; i < bulk; ++i)
    testing::write_file(src / ("bulk/d" + std::to_string(i % 37)) / ("f" + std::to_string(i)), std::to_string(i) + "\n");
  REQUIRE(git(src, {"add", "-A"}).exit == 0);
  // A submodule entry (a gitlink), as a repository that uses submodules has.
  REQUIRE(git(src, {"update-index", "--add", "--cacheinfo", "160000,1111111111111111111111111111111111111111,vendor/lib"})
              .exit == 0);
  REQUIRE(git(src, {"commit", "-q", "-m", "everything"}).exit == 0);
  return src;
}

}  // namespace

TEST_CASE("Worktree_CheckoutIsWhatGitWouldCheckOut") {
  testing::TempDir dir{"swarm-checkout"};
  const fs::path src = make_source(dir, 5000);  // enough files for several writer threads
  Hub hub = Hub::create(dir / "hub.git", src);
  Worktree wt = Worktree::create(hub, dir / "wt", "s");

  // git sees a clean worktree on the slot's branch, with the source's index entries.
  CHECK(git(wt.path(), {"status", "--porcelain", "--ignore-submodules=none"}).out == "");
  CHECK(git(wt.path(), {"symbolic-ref", "HEAD"}).out == "refs/heads/swarm/s\n");
  CHECK(git(wt.path(), {"ls-files", "-s"}).out == git(src, {"ls-files", "-s"}).out);
  // The same bytes, modes and links as the source.
  CHECK(testing::run(testing::Command{{"/usr/bin/diff", "-r", "-q", "--no-dereference", "--exclude=.git",
                                       "--exclude=vendor", src.string(), wt.path().string()},
                                      {},
                                      {}})
            .exit == 0);
  CHECK((fs::status(wt.path() / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK((fs::status(wt.path() / "empty").permissions() & fs::perms::owner_exec) == fs::perms::none);
  CHECK(fs::read_symlink(wt.path() / "link") == "deep/a/b/c/leaf.txt");
  CHECK(fs::read_symlink(wt.path() / "dangling") == "/nowhere/at/all");
  CHECK(fs::is_directory(wt.path() / "vendor/lib"));
  CHECK(testing::read_file(wt.path() / "crlf.txt") == "a\r\nb\r\n");  // bytes as committed
  // The index carries stat data: a file changed later in place is seen as changed.
  testing::write_file(wt.path() / "deep/a/b/c/leaf.txt", "changed\n");
  CHECK(git(wt.path(), {"status", "--porcelain"}).out == " M deep/a/b/c/leaf.txt\n");
}

TEST_CASE("Worktree_CheckoutWithAttributesIsLibgit2s") {
  // .gitattributes can change what a file looks like on disk: libgit2's checkout applies them.
  testing::TempDir dir{"swarm-checkout"};
  fs::path src = dir / "src";
  fs::create_directories(src);
  REQUIRE(git(src, {"init", "-q", "-b", "main"}).exit == 0);
  testing::write_file(src / ".gitattributes", "*.txt eol=crlf\n");
  testing::write_file(src / "a.txt", "one\ntwo\n");
  REQUIRE(git(src, {"add", "-A"}).exit == 0);
  REQUIRE(git(src, {"commit", "-q", "-m", "attrs"}).exit == 0);
  Hub hub = Hub::create(dir / "hub.git", src);
  Worktree wt = Worktree::create(hub, dir / "wt", "s");
  CHECK(testing::read_file(wt.path() / "a.txt") == "one\r\ntwo\r\n");
  CHECK(git(wt.path(), {"status", "--porcelain"}).out == "");
}
