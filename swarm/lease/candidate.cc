#include "swarm/lease/candidate.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "swarm/base/boot_clock.h"
#include "swarm/base/error.h"
#include "swarm/base/test_seam.h"
#include "swarm/lease/election.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_keeper.h"

namespace swarm {

namespace {

using std::chrono::milliseconds;

void say(const std::function<void(const std::string&)>& to, const std::string& what) {
  if (to) to(what);
}

// SWARM_FENCING_TOKEN_FILE: a file in a folder of its own that only this
// user may enter, made for this run and removed after it; each write
// replaces the file whole (a new file renamed over it), so a reader sees
// the old token or the new one, never a part.
class TokenFile {
 public:
  TokenFile() {
    std::string path = (std::filesystem::temp_directory_path() / "swarm-elect-XXXXXX").string();
    if (::mkdtemp(path.data()) == nullptr)
      throw Error(Errc::filesystem, "cannot make a folder for the token file in " +
                                        std::filesystem::temp_directory_path().string() + ": " + std::strerror(errno));
    folder_ = path;
    dir_ = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_ < 0) {
      ::rmdir(folder_.c_str());
      throw Error(Errc::filesystem, "cannot open " + folder_ + ": " + std::strerror(errno));
    }
    write("");
  }
  ~TokenFile() {
    ::unlinkat(dir_, "token.new", 0);
    ::unlinkat(dir_, "token", 0);
    ::close(dir_);
    ::rmdir(folder_.c_str());
  }
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  std::string path() const { return folder_ + "/token"; }

  // No token: the file gone (what a reader takes as empty), when it cannot
  // be written empty (a full disk, no inodes).
  bool remove() { return ::unlinkat(dir_, "token", 0) == 0 || errno == ENOENT; }

  // The token (and a newline), or nothing: throws when it cannot be written.
  void write(const std::string& text) {
    const std::string content = text.empty() ? text : text + "\n";
    const int fd = ::openat(dir_, "token.new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0 && ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    if (fd >= 0) written = ::close(fd) == 0 && written;
    if (!written || ::renameat(dir_, "token.new", dir_, "token") != 0)
      throw Error(Errc::filesystem, "cannot write the token file " + path() + ": " + std::strerror(errno));
  }

 private:
  std::string folder_;
  int dir_ = -1;
};

// The candidate's life beside its command: in line, leading, stepping down,
// in line again, until the command ends (ended()).
class Candidacy {
 public:
  Candidacy(const LeaseStore& store, const std::string& name, const LeaseHolder& who, milliseconds ttl,
            const CandidateCommand& candidate, TokenFile& file)
      : store_(store), name_(name), ttl_(ttl), candidate_(candidate), file_(file), election_(store, name, who, ttl) {}

  // Leads at once when the lease is free and nobody waits (nullopt otherwise).
  std::optional<Lease> try_first() {
    try {
      Lease lease = election_.try_lead();
      if (!grant_ran_out(lease)) return lease;
      release_quietly(store_, lease);
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict) throw;
    }
    return std::nullopt;
  }

  // On a thread of its own while `child` runs: leads with `first` when
  // given, then campaigns, leads, and so on until ended().
  void run(ChildProcess& child, std::optional<Lease> first) {
    std::optional<Lease> lease = std::move(first);
    bool failing = false;
    milliseconds unwritable{1000};  // the wait after a grant whose token could not be written
    while (!ended()) {
      if (!lease) {
        try {
          lease = election_.campaign();
          failing = false;
        } catch (const Cancelled&) {
          return;
        } catch (const std::exception& e) {
          // NATS gone, say: said once, tried again each second meanwhile.
          if (!failing)
            say(candidate_.warn, "waiting to lead " + name_ + " failed (" + std::string(e.what()) +
                                     "); trying again each second");
          failing = true;
          pause(std::chrono::seconds(1));
          continue;
        }
        if (ended() || grant_ran_out(*lease)) {
          release_quietly(store_, *lease);
          lease.reset();
          continue;
        }
        if (!tell(child, SIGUSR1, std::to_string(lease->token))) {
          release_quietly(store_, *lease);  // not told it leads: it must not lead
          lease.reset();
          pause(unwritable);  // a full disk: longer each time, up to the TTL
          unwritable = std::min(unwritable * 2, ttl_);
          continue;
        }
        unwritable = std::chrono::seconds(1);
        say(candidate_.note, "leads " + name_ + " now (token " + std::to_string(lease->token) + "): SIGUSR1 to " +
                                 candidate_.command.front());
      }
      const std::uint64_t token = lease->token;
      try {
        terms_.push_back({token, lead(child, std::move(*lease))});
      } catch (const std::exception& e) {
        // Cannot happen but by a bug: the command is told it does not lead
        // (the lease, no longer renewed, runs out), and the candidate goes on.
        tell(child, SIGUSR2, "");
        say(candidate_.warn, "leading " + name_ + " failed (" + std::string(e.what()) + "): SIGUSR2 to " +
                                 candidate_.command.front());
        terms_.push_back({token, HeldEnd::lease_lost});
        pause(give_up_lead(ttl_));
      }
      lease.reset();
    }
    // The command ended before this thread took the first grant over.
    if (lease) {
      release_quietly(store_, *lease);
      terms_.push_back({lease->token, HeldEnd::by_itself});
    }
  }

  // The command ended: leave the line, or stop leading (and release).
  void end() {
    {
      std::lock_guard lock(mu_);
      ended_ = true;
    }
    cv_.notify_all();
    election_.cancel();
  }

  const std::vector<Term>& terms() const { return terms_; }

 private:
  bool ended() const {
    std::lock_guard lock(mu_);
    return ended_;
  }

  void pause(milliseconds length) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, length, [&] { return ended_; });
  }

  void wake() {
    { std::lock_guard lock(mu_); }
    cv_.notify_all();
  }

  // The token file first, then the signal: a command that hears SIGUSR1
  // reads the new token; one that hears SIGUSR2 finds none (the file empty,
  // or gone when even that could not be written). False when the file
  // cannot be written for SIGUSR1 (the command is not told it leads, and
  // the candidate gives that grant up).
  bool tell(ChildProcess& child, int signo, const std::string& token) {
    try {
      file_.write(token);
    } catch (const Error& e) {
      if (signo == SIGUSR1) {
        say(candidate_.warn, std::string(e.what()) + "; not leading " + name_ + " this time");
        return false;
      }
      // Needs no room: never a stale token after SIGUSR2.
      say(candidate_.warn, std::string(e.what()) + (file_.remove() ? "; removed it instead" : "; nor could it be removed"));
    }
    child.signal_command(signo);
    return true;
  }

  // Leads under `lease` until the lease is lost, the leader is asked to step
  // down (after its minimum term), or the command ends.
  HeldEnd lead(ChildProcess& child, Lease lease) {
    const std::string program = candidate_.command.front();
    std::atomic<bool> lost{false};
    std::atomic<bool> told{false};  // SIGUSR2 goes once a term, whatever ends it
    auto no_longer = [&] {
      if (!told.exchange(true)) tell(child, SIGUSR2, "");
    };
    LeaseKeeper keeper(store_, lease, [&](const std::string& why, BootTime) {
      no_longer();  // at once: the deadline is TTL/5 away at least
      say(candidate_.note, "lease " + name_ + " was lost (" + why + "): SIGUSR2 to " + program);
      lost = true;
      wake();
    });
    std::atomic<bool> asked{false};
    // Best effort, as a waiter's hearing of hand-overs: a leader that cannot
    // hear requests to step down still leads, and says so.
    std::optional<StepDownWatch> step_down;
    try {
      step_down.emplace(store_, lease, "SIGUSR2 to " + program, candidate_.note, [&] {
        asked = true;
        wake();
      });
    } catch (const std::exception& e) {
      say(candidate_.warn, "leading " + name_ + " without hearing requests to step down: " + e.what());
    }
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return ended_ || lost || asked; });
    }
    if (step_down) step_down->cancel();
    HeldEnd end = HeldEnd::by_itself;
    std::pair<std::string, std::string> handover;
    if (!lost && asked) {
      // Told, then the lease kept TTL/5 more (renewed as ever): the next
      // leader is granted only after the command had that long to hear it.
      handover = step_down->handover();
      no_longer();
      stop_here_for_test(kLeaseStop, "stepping-down");
      pause(give_up_lead(ttl_));
      end = HeldEnd::resigned;
    }
    if (step_down) step_down->withdraw();
    keeper.stop();
    if (keeper.lost()) return HeldEnd::lease_lost;
    try {
      store_.release(keeper.lease(), handover.first, handover.second);
      if (end == HeldEnd::resigned)
        store_.journal().record(elect_resign_event(store_.bucket_name(), keeper.lease(), handover.second));
    } catch (const Error& e) {
      say(candidate_.warn, "could not release lease " + name_ + " (it expires by itself): " + e.what());
    }
    return end;
  }

  const LeaseStore& store_;
  const std::string name_;
  const milliseconds ttl_;
  const CandidateCommand& candidate_;
  TokenFile& file_;
  Election election_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false;
  std::vector<Term> terms_;
};

}  // namespace

CandidateRun run_as_candidate(const LeaseStore& store, const std::string& name, const LeaseHolder& who,
                              milliseconds ttl, const CandidateCommand& candidate) {
  TokenFile file;
  Candidacy candidacy(store, name, who, ttl, candidate, file);
  std::optional<Lease> first = candidacy.try_first();
  std::vector<std::pair<std::string, std::string>> env = {
      {"SWARM_LEASE", name}, {"SWARM_LEADER", first ? "1" : "0"}, {"SWARM_FENCING_TOKEN_FILE", file.path()}};
  std::unique_ptr<ChildProcess> child;
  try {
    if (first) {
      env.emplace_back("SWARM_FENCING_TOKEN", std::to_string(first->token));
      file.write(std::to_string(first->token));
      say(candidate.note, "leads " + name + " from the start (token " + std::to_string(first->token) + ")");
    }
    child = ChildProcess::start(candidate.command, env);
  } catch (...) {
    if (first) release_quietly(store, *first);
    throw;
  }
  RunningNotice running(candidate.running, *child);
  std::thread life([&] { candidacy.run(*child, std::move(first)); });
  CandidateRun out;
  out.status = child->wait();
  candidacy.end();
  life.join();
  out.terms = candidacy.terms();
  return out;
}

}  // namespace swarm
