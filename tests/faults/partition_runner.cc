// The partition test (scripts/partition.sh, as root): a 3-node nats-server
// cluster, one node per network namespace on a bridge of its own, and
// `swarm lock part` loops on both sides of a cut: two in the root namespace
// (which reaches every node) and one beside each node (which reaches only its
// node). Each cut isolates the node that leads the lease stream, then heals.
// Every command run under the lease writes a start and an end mark, with its
// fencing token, to one file; the checker then wants: tokens that only grow,
// no two holders at once unless the older one was cut off and fenced by a
// higher token, and no acknowledged grant lost by the stream.
//   partition_runner [--cuts N] [--cut-seconds S] [--heal-seconds S] [--ttl DUR] [--max-seconds T]
// $SWARM_PARTITION_RUN (default: the pid) names the run: namespaces swp<run%10000>n1..3,
// subnet 10.231.<run%250>.0/24. Exit 0 when all checks hold, 1 when one fails,
// 2 when the setup failed (the temporary folder with the logs is kept then, and
// always with $SWARM_PARTITION_KEEP set).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/swarm_fixture.h"
#include "kv/bucket.h"
#include "support/git_module.h"
#include "swarm/bootstrap.h"

extern char** environ;

using namespace testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kNodes = 3;
const char* const kLease = "part";
const char* const kLeaseBucket = "swarm-leases";

volatile std::sig_atomic_t g_stop_signal = 0;

// A second SIGINT/SIGTERM kills at once (the script's trap removes what is left).
void on_stop_signal(int signo) {
  g_stop_signal = signo;
  std::signal(signo, SIG_DFL);
}

struct SetupFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void throw_if_interrupted() {
  if (g_stop_signal != 0) throw Interrupted("interrupted by signal " + std::to_string(g_stop_signal));
}

// Sleeps in short steps, so that SIGINT/SIGTERM end the run promptly.
void pause_for(std::chrono::milliseconds length) {
  auto until = std::chrono::steady_clock::now() + length;
  while (std::chrono::steady_clock::now() < until) {
    throw_if_interrupted();
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(), 100ms));
  }
}

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Single quotes for sh, so a path is one word whatever it holds.
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// execve wants a path: the program as PATH finds it.
std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return (fs::path(dir) / program).string();
  throw SetupFailed(program + " is not on PATH");
}

RunResult run_tool(std::vector<std::string> args, std::chrono::milliseconds limit = 30s) {
  args[0] = on_path(args[0]);
  Command c;
  c.args = std::move(args);
  return run(c, limit);
}

// A tool run that must work for the setup to go on.
void must(const std::vector<std::string>& args) {
  auto r = run_tool(args);
  if (r.exit == 0) return;
  std::string line;
  for (const auto& a : args) line += a + " ";
  throw SetupFailed(line + "failed (" + std::to_string(r.exit) + "): " + trimmed(r.err));
}

struct Options {
  int cuts = 10;
  int cut_seconds = 8;
  int heal_seconds = 8;
  std::string ttl = "3s";
  int max_seconds = 420;  // of cuts: stopping and checking take up to 3 minutes more
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--cuts") o.cuts = std::atoi(argv[i + 1]);
    else if (arg == "--cut-seconds") o.cut_seconds = std::atoi(argv[i + 1]);
    else if (arg == "--heal-seconds") o.heal_seconds = std::atoi(argv[i + 1]);
    else if (arg == "--ttl") o.ttl = argv[i + 1];
    else if (arg == "--max-seconds") o.max_seconds = std::atoi(argv[i + 1]);
    else throw SetupFailed("unknown option " + arg);
  }
  return o;
}

// The names and addresses of one run: short (interface names are at most 15
// characters) and derived from one number, so that the script can find them.
struct Names {
  std::string prefix;  // swp1234
  int subnet = 0;      // the third octet of 10.231.X.0/24

  explicit Names(long number) : prefix("swp" + std::to_string(number % 10000)), subnet(static_cast<int>(number % 250)) {}
  std::string ns(int node) const { return prefix + "n" + std::to_string(node); }
  std::string host_veth(int node) const { return prefix + "v" + std::to_string(node); }
  std::string node_veth(int node) const { return prefix + "e" + std::to_string(node); }
  std::string bridge() const { return prefix + "br"; }
  std::string base() const { return "10.231." + std::to_string(subnet) + "."; }
  std::string ip(int node) const { return base() + std::to_string(node); }
  std::string cidr() const { return base() + "0/24"; }
  std::string url(int node) const { return "nats://" + ip(node) + ":4222"; }
  std::string all_urls() const { return url(1) + "," + url(2) + "," + url(3); }
};

// The bridge, the namespaces and their veths, removed again when it dies
// (iptables rules inside a namespace go with it).
class Network {
 public:
  explicit Network(const Names& names) : names_(names) {
    refuse_if_taken();
    try {
      must({"ip", "link", "add", names_.bridge(), "type", "bridge"});
      must({"ip", "addr", "add", names_.base() + "254/24", "dev", names_.bridge()});
      must({"ip", "link", "set", names_.bridge(), "up"});
      for (int node = 1; node <= kNodes; ++node) add_node(node);
    } catch (...) {
      remove();  // no destructor runs for a constructor that threw
      throw;
    }
  }
  ~Network() { remove(); }
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Everything to and from the /24 is dropped inside the node's namespace
  // but loopback, so its own looper still reaches it and nothing else does.
  void cut(int node) const {
    const std::string ns = names_.ns(node);
    must({"ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-i", "lo", "-j", "ACCEPT"});
    must({"ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-o", "lo", "-j", "ACCEPT"});
    must({"ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-s", names_.cidr(), "-j", "DROP"});
    must({"ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-d", names_.cidr(), "-j", "DROP"});
  }
  void heal(int node) const {
    must({"ip", "netns", "exec", names_.ns(node), "iptables", "-F", "INPUT"});
    must({"ip", "netns", "exec", names_.ns(node), "iptables", "-F", "OUTPUT"});
  }

 private:
  // Another run (or a leftover) with these names or this subnet: not ours to touch.
  void refuse_if_taken() const {
    auto namespaces = run_tool({"ip", "netns", "list"}).out;
    if (namespaces.find(names_.prefix + "n") != std::string::npos)
      throw SetupFailed("namespaces " + names_.prefix + "n* exist already (another run, or a leftover)");
    if (run_tool({"ip", "link", "show", names_.bridge()}).exit == 0)
      throw SetupFailed("bridge " + names_.bridge() + " exists already");
    if (!trimmed(run_tool({"ip", "-o", "addr", "show", "to", names_.cidr()}).out).empty())
      throw SetupFailed("subnet " + names_.cidr() + " is in use here");
  }

  // The veths go first: a namespace outlives its `ip netns del` while a
  // socket in it still retransmits, and its veth (on our side too) with it.
  void remove() const {
    for (int node = 1; node <= kNodes; ++node) run_tool({"ip", "link", "del", names_.host_veth(node)});
    for (int node = 1; node <= kNodes; ++node) run_tool({"ip", "netns", "del", names_.ns(node)});
    run_tool({"ip", "link", "del", names_.bridge()});
  }

  void add_node(int node) {
    const std::string ns = names_.ns(node);
    must({"ip", "netns", "add", ns});
    must({"ip", "link", "add", names_.host_veth(node), "type", "veth", "peer", "name", names_.node_veth(node), "netns", ns});
    must({"ip", "link", "set", names_.host_veth(node), "master", names_.bridge()});
    must({"ip", "link", "set", names_.host_veth(node), "up"});
    must({"ip", "netns", "exec", ns, "ip", "addr", "add", names_.ip(node) + "/24", "dev", names_.node_veth(node)});
    must({"ip", "netns", "exec", ns, "ip", "link", "set", names_.node_veth(node), "up"});
    must({"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"});
  }

  Names names_;
};

// A long-lived process in a process group of its own (so that what it starts
// dies with it), its output appended to `log`.
// The environment with `changes` on top ("" unsets), built before a fork:
// nothing allocates after it.
std::vector<std::string> environment_with(const std::map<std::string, std::string>& changes) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : changes) {
    if (v.empty()) env.erase(k);
    else env[k] = v;
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const std::map<std::string, std::string>& env = {},
            const fs::path& cwd = {}) {
  std::vector<std::string> argv_strings = args;
  argv_strings[0] = on_path(args[0]);
  std::vector<std::string> env_strings = environment_with(env);
  std::vector<char*> argv = pointers_to(argv_strings), envp = pointers_to(env_strings);
  const std::string log_path = log.string(), dir = cwd.string();
  pid_t pid = fork();
  if (pid < 0) throw SetupFailed("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a runner killed outright takes its servers and loops along
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with a kill of the group right after
  return pid;
}

bool reaped(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

// Signals the group, then SIGKILL after `grace`; reaps the leader.
void stop_group(pid_t& pid, int signo, std::chrono::milliseconds grace) {
  if (pid <= 0) return;
  kill(-pid, signo);
  auto until = std::chrono::steady_clock::now() + grace;
  while (!reaped(pid)) {
    if (std::chrono::steady_clock::now() >= until) {
      kill(-pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  kill(-pid, SIGKILL);  // what the leader left in its group
  pid = -1;
}

bool accepts(const std::string& ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

std::string server_version() {
  auto said = trimmed(run_tool({"nats-server", "--version"}).out);
  auto v = said.find(" v");
  return v == std::string::npos ? said : said.substr(v + 1);
}

// A command's start or end as its mark says; `end_ns` 0 until an end mark.
struct Run {
  unsigned long long token = 0;
  long long start_ns = 0;
  long long end_ns = 0;
  std::string side;
  std::string pid;
  bool by_term = false;
};

struct CutWindow {
  int node = 0;
  long long cut_ns = 0;
  long long heal_ns = 0;
};

struct Verdict {
  std::vector<Run> runs;  // by start time
  int without_end = 0;
  int malformed_marks = 0;
  int backwards = 0;
  int unfenced = 0;
  int fenced = 0;
  int lost = 0;
  unsigned long long highest_token = 0;
  std::optional<unsigned long long> last_revision;
  std::vector<std::string> notes;
};

std::string describe(const Run& r, long long origin) {
  auto ms = [&](long long ns) { return std::to_string((ns - origin) / 1000000); };
  return r.side + " pid " + r.pid + " token " + std::to_string(r.token) + " [" + ms(r.start_ns) + " ms, " +
         (r.end_ns != 0 ? ms(r.end_ns) : "?") + " ms]";
}

// Pairs the marks (start TOKEN TIME_NS SIDE PID / end TOKEN TIME_NS SIDE PID done|term)
// by side, pid and token; a run without an end lasts until `run_end_ns`.
std::vector<Run> runs_from_marks(const fs::path& marks, long long run_end_ns, Verdict& verdict) {
  std::map<std::string, Run> by_key;
  std::ifstream in(marks);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind, how;
    Run mark;
    long long time_ns = 0;
    if (!(words >> kind >> mark.token >> time_ns >> mark.side >> mark.pid) || (kind != "start" && kind != "end")) {
      ++verdict.malformed_marks;
      verdict.notes.push_back("malformed mark: " + line);
      continue;
    }
    Run& seen = by_key.try_emplace(mark.side + " " + mark.pid + " " + std::to_string(mark.token), mark).first->second;
    if (kind == "start") seen.start_ns = time_ns;
    if (kind == "end") seen.end_ns = time_ns;
    if (kind == "end") seen.by_term = words >> how && how == "term";
  }
  std::vector<Run> runs;
  for (auto& [key, pending] : by_key) {
    if (pending.start_ns == 0) continue;  // an end whose start never made it: nothing to check
    if (pending.end_ns == 0) {
      ++verdict.without_end;
      verdict.notes.push_back("no end mark: " + describe(pending, pending.start_ns) + " (counted as running until the end)");
      pending.end_ns = run_end_ns;
    }
    runs.push_back(pending);
  }
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.start_ns < b.start_ns; });
  return runs;
}

// (a) Ordered by start, every token is higher than every earlier one.
void check_tokens_grow(Verdict& v, long long origin) {
  const Run* highest = nullptr;
  for (const Run& r : v.runs) {
    if (highest != nullptr && r.token <= highest->token) {
      ++v.backwards;
      v.notes.push_back("token went backwards: " + describe(r, origin) + " after " + describe(*highest, origin));
    }
    if (highest == nullptr || r.token > highest->token) highest = &r;
  }
  v.highest_token = highest != nullptr ? highest->token : 0;
}

// Whether the run's side (a node's looper) was cut off at some time while it ran.
bool was_cut_off(const Run& r, const std::vector<CutWindow>& cuts) {
  for (const auto& c : cuts)
    if (r.side == "n" + std::to_string(c.node) && c.cut_ns <= r.end_ns && r.start_ns <= c.heal_ns) return true;
  return false;
}

// (b) Two runs at once only when the later holds the higher token and the
// earlier was cut off: a fenced resource refuses its writes.
void check_overlaps(Verdict& v, const std::vector<CutWindow>& cuts, long long origin) {
  for (std::size_t i = 0; i < v.runs.size(); ++i) {
    const Run& earlier = v.runs[i];
    for (std::size_t j = i + 1; j < v.runs.size() && v.runs[j].start_ns < earlier.end_ns; ++j) {
      const Run& later = v.runs[j];
      if (later.token > earlier.token && was_cut_off(earlier, cuts)) {
        ++v.fenced;
        v.notes.push_back("fenced overlap (allowed): " + describe(earlier, origin) + " and " + describe(later, origin));
        continue;
      }
      ++v.unfenced;
      v.notes.push_back("double holder: " + describe(earlier, origin) + " and " + describe(later, origin));
    }
  }
}

kv::ConnectionOptions root_connection(const Names& names) {
  kv::ConnectionOptions o;
  o.urls = kv::split_urls(names.all_urls());
  o.connect_timeout = 2s;
  o.request_timeout = 2s;
  o.name = "partition-runner";
  return o;
}

// Tries `read` on a fresh connection to all three nodes until it gives an
// answer or `limit` passes (an election, a reconnect).
template <class Read>
auto with_cluster(const Names& names, std::chrono::seconds limit, Read read) -> decltype(read(std::declval<kv::Bucket&>())) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    try {
      auto connection = swarm::connect_nats(root_connection(names));
      auto bucket = kv::Bucket::open(connection, kLeaseBucket);
      if (auto answer = read(bucket)) return answer;
    } catch (const std::exception&) {
      // No leader yet, or a node that does not answer: try again.
    }
    pause_for(500ms);
  }
  return std::nullopt;
}

// n1..n3 of the lease stream's leader, or 0 when none is found in time.
int lease_leader(const Names& names) {
  auto leader = with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<std::string> {
    auto name = b.leader();
    return name.empty() ? std::nullopt : std::optional<std::string>(name);
  });
  if (!leader || leader->size() != 2 || (*leader)[0] != 'n') return 0;
  int node = (*leader)[1] - '0';
  return node >= 1 && node <= kNodes ? node : 0;
}

// (c) The key's last revision is at least the highest token any run started with.
void check_nothing_lost(Verdict& v, const Names& names) {
  v.last_revision = with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<unsigned long long> {
    bool deleted = false;
    auto last = b.last(kLease, &deleted);
    return last ? std::optional<unsigned long long>(last->revision) : std::nullopt;
  });
  if (!v.last_revision) {
    v.lost = 1;
    v.notes.push_back("lease " + std::string(kLease) + " could not be read after healing");
  } else if (*v.last_revision < v.highest_token) {
    v.lost = 1;
    v.notes.push_back("lost grant: the key's last revision is " + std::to_string(*v.last_revision) +
                      ", but a run started with token " + std::to_string(v.highest_token));
  }
}

// The whole run's state; whatever it started is stopped when it dies, also
// when the run failed or was interrupted.
class PartitionRun {
 public:
  PartitionRun(const Options& options, long run_number)
      : options_(options), names_(run_number), network_(names_), dir_(make_temp_dir()) {}
  ~PartitionRun() {
    for (auto& pid : loopers_) stop_group(pid, SIGKILL, 1s);
    for (auto& pid : servers_) stop_group(pid, SIGKILL, 1s);
  }
  PartitionRun(const PartitionRun&) = delete;
  PartitionRun& operator=(const PartitionRun&) = delete;

  const fs::path& dir() const { return dir_; }

  void start_servers() {
    for (int node = 1; node <= kNodes; ++node) servers_.push_back(spawn(server_args(node), dir_ / log_name(node)));
    for (int node = 1; node <= kNodes; ++node) wait_until_listening(node);
  }

  void up_workspace() {
    fs::create_directories(workspace());
    must({"git", "-C", workspace().string(), "init", "-q"});
    must({"git", "-C", workspace().string(), "-c", "user.name=partition", "-c", "user.email=p@p", "commit", "-q",
          "--allow-empty", "-m", "empty"});
    RunResult r;
    auto until = std::chrono::steady_clock::now() + 40s;
    do {
      r = run(swarm_command({"up", "--nats-url", names_.all_urls(), "--replicas", "3"}, "up"), 60s);
      if (r.exit == 0) return;
      pause_for(500ms);
    } while (std::chrono::steady_clock::now() < until);
    throw SetupFailed("swarm up on the cluster failed (" + std::to_string(r.exit) + "): " + trimmed(r.err));
  }

  void start_loopers() {
    write_file(mark_script(), mark_script_text());
    for (const char* side : {"root-a", "root-b"}) {
      auto c = swarm_command({}, side);
      loopers_.push_back(spawn({"bash", "-c", loop_text(side, "--workspace " + quoted(workspace().string()))},
                               dir_ / (std::string(side) + ".log"), c.env, workspace()));
    }
    for (int node = 1; node <= kNodes; ++node) {
      const std::string side = "n" + std::to_string(node);
      auto c = swarm_command({}, side);
      c.env["SWARM_WORKSPACE"] = "";  // nothing but its own node's URL
      loopers_.push_back(spawn({"ip", "netns", "exec", names_.ns(node), "bash", "-c",
                                loop_text(side, "--nats-url " + names_.url(node))},
                               dir_ / (side + ".log"), c.env, dir_));
    }
  }

  void run_cuts() {
    started_ = std::chrono::steady_clock::now();
    const auto one_cut = std::chrono::seconds(options_.cut_seconds + options_.heal_seconds);
    for (int i = 0; i < options_.cuts; ++i) {
      if (std::chrono::steady_clock::now() + one_cut > started_ + std::chrono::seconds(options_.max_seconds)) {
        notes_.push_back("stopped after " + std::to_string(i) + " cuts: --max-seconds " +
                         std::to_string(options_.max_seconds) + " reached");
        break;
      }
      int node = lease_leader(names_);
      if (node == 0) {
        notes_.push_back("cut " + std::to_string(i + 1) + ": no leader of the lease stream within 30 s; skipped");
        continue;
      }
      cut_once(node);
    }
  }

  // Loopers end their current lock and stop; then the servers stay up for the check.
  long long stop_loopers() {
    write_file(dir_ / "stop", "");
    auto until = std::chrono::steady_clock::now() + 60s;
    for (auto& pid : loopers_) {
      bool exited = false;
      while (!(exited = reaped(pid)) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(50ms);
      if (exited) {
        kill(-pid, SIGKILL);  // whatever it left in its group
        pid = -1;
        continue;
      }
      notes_.push_back("looper " + std::to_string(pid) + " did not stop within 60 s of the stop file: SIGTERM");
      stop_group(pid, SIGTERM, 5s);
    }
    return wall_ns();
  }

  void stop_servers() {
    for (auto& pid : servers_) stop_group(pid, SIGTERM, 10s);
  }

  Verdict check(long long run_end_ns) const {
    Verdict v;
    v.runs = runs_from_marks(marks(), run_end_ns, v);
    const long long origin = v.runs.empty() ? 0 : v.runs.front().start_ns;
    check_tokens_grow(v, origin);
    check_overlaps(v, cuts_, origin);
    check_nothing_lost(v, names_);
    v.notes.insert(v.notes.begin(), notes_.begin(), notes_.end());
    return v;
  }

  const std::vector<CutWindow>& cuts() const { return cuts_; }
  std::chrono::steady_clock::time_point started() const { return started_; }

 private:
  static fs::path make_temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "swarm-partition-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw SetupFailed("mkdtemp failed");
    return pattern;
  }
  static std::string log_name(int node) { return "nats-n" + std::to_string(node) + ".log"; }
  fs::path workspace() const { return dir_ / "ws"; }
  fs::path marks() const { return dir_ / "marks"; }
  fs::path mark_script() const { return dir_ / "mark.sh"; }

  std::vector<std::string> server_args(int node) const {
    std::string routes;
    for (int other = 1; other <= kNodes; ++other)
      if (other != node) routes += (routes.empty() ? "" : ",") + ("nats://" + names_.ip(other) + ":6222");
    const std::string name = "n" + std::to_string(node);
    return {"ip", "netns", "exec", names_.ns(node), on_path("nats-server"), "-js", "-a", names_.ip(node), "-p", "4222",
            "-sd", (dir_ / name).string(), "--server_name", name, "--cluster_name", "swp", "--cluster",
            "nats://" + names_.ip(node) + ":6222", "--routes", routes};
  }

  void wait_until_listening(int node) {
    auto until = std::chrono::steady_clock::now() + 15s;
    pid_t& pid = servers_[static_cast<std::size_t>(node - 1)];
    while (!accepts(names_.ip(node), 4222)) {
      const bool exited = reaped(pid);
      if (exited) pid = -1;  // else the destructor stops it
      if (exited || std::chrono::steady_clock::now() > until)
        throw SetupFailed("nats-server n" + std::to_string(node) + " did not listen on " + names_.ip(node) +
                          ":4222; see " + (dir_ / log_name(node)).string());
      pause_for(100ms);
    }
  }

  // `swarm ARGS` as a host of its own, with a home in the temp folder.
  Command swarm_command(const std::vector<std::string>& args, const std::string& host) const {
    Command c;
    c.args = {SWARM_BINARY};
    c.args.insert(c.args.end(), args.begin(), args.end());
    const fs::path home = dir_ / "home" / host;
    fs::create_directories(home);
    c.env = {{"HOME", home.string()},
             {"XDG_CONFIG_HOME", (home / "config").string()},
             {"SWARM_HOST", "part-" + host},
             {"SWARM_HOST_ID", names_.prefix + "-" + host},
             {"NATS_URL", ""},
             {"SWARM_WORKSPACE", workspace().string()}};
    c.cwd = workspace();
    return c;
  }

  // The command run under the lease: start mark, 0.2 s of work, end mark (or
  // an end mark by SIGTERM when swarm stops it after losing the lease).
  std::string mark_script_text() const {
    const std::string m = quoted(marks().string());
    return "side=$1\n"
           "echo \"start $SWARM_FENCING_TOKEN $(date +%s%N) $side $$\" >> " + m + "\n"
           "trap 'echo \"end $SWARM_FENCING_TOKEN $(date +%s%N) $side $$ term\" >> " + m + "; exit 143' TERM\n"
           "sleep 0.2 & wait $!\n"
           "echo \"end $SWARM_FENCING_TOKEN $(date +%s%N) $side $$ done\" >> " + m + "\n";
  }

  // A lock loop until the stop file shows; a failed lock waits a little
  // before the next, so that a refused connection does not spin.
  std::string loop_text(const std::string& side, const std::string& connect_flags) const {
    return "while [ ! -e " + quoted((dir_ / "stop").string()) + " ]; do " + quoted(SWARM_BINARY) + " --timeout 10s " +
           connect_flags + " lock " + kLease + " --ttl " + quoted(options_.ttl) + " --wait 30s -- /bin/sh " +
           quoted(mark_script().string()) + " " + side + " || sleep 0.2; done";
  }

  void cut_once(int node) {
    CutWindow window{node, wall_ns(), 0};
    std::printf("  cut %zu: n%d (the lease stream's leader) cut off for %d s\n", cuts_.size() + 1, node,
                options_.cut_seconds);
    std::fflush(stdout);
    try {
      network_.cut(node);
      pause_for(std::chrono::seconds(options_.cut_seconds));
    } catch (...) {
      network_.heal(node);
      throw;
    }
    network_.heal(node);
    window.heal_ns = wall_ns();
    cuts_.push_back(window);
    // Beside the marks, for whoever reads a kept run's timeline.
    std::ofstream(dir_ / "cuts", std::ios::app) << "n" << node << " cut " << window.cut_ns << " healed "
                                                 << window.heal_ns << "\n";
    pause_for(std::chrono::seconds(options_.heal_seconds));
  }

  Options options_;
  Names names_;
  Network network_;  // before dir_: a network that cannot be built leaves no folder behind
  fs::path dir_;
  std::vector<pid_t> servers_;
  std::vector<pid_t> loopers_;
  std::vector<CutWindow> cuts_;
  std::vector<std::string> notes_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// Runs that started while a node was cut off: on the majority side (which
// must elect a new stream leader first) and on the cut-off node's own side
// (which must get none: it has no quorum).
std::pair<int, int> runs_during_cuts(const std::vector<Run>& runs, const std::vector<CutWindow>& cuts) {
  int majority = 0, cut_side = 0;
  for (const auto& r : runs)
    for (const auto& c : cuts)
      if (c.cut_ns <= r.start_ns && r.start_ns <= c.heal_ns) {
        (r.side == "n" + std::to_string(c.node) ? cut_side : majority) += 1;
        break;
      }
  return {majority, cut_side};
}

bool print_summary(const Verdict& v, const PartitionRun& partition, const Options& options, const std::string& version) {
  std::map<std::string, int> per_side;
  int by_term = 0;
  for (const auto& r : v.runs) {
    ++per_side[r.side];
    by_term += r.by_term ? 1 : 0;
  }
  std::string sides, cut_nodes;
  for (const auto& [side, count] : per_side) sides += (sides.empty() ? "" : ", ") + side + " " + std::to_string(count);
  for (const auto& c : partition.cuts()) cut_nodes += (cut_nodes.empty() ? "" : " ") + ("n" + std::to_string(c.node));
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - partition.started());
  std::printf("partition: %zu of %d cuts done (%s) in %lld s; %zu runs (%s)\n", partition.cuts().size(), options.cuts,
              cut_nodes.c_str(), static_cast<long long>(seconds.count()), v.runs.size(), sides.c_str());
  const auto [majority, cut_side] = runs_during_cuts(v.runs, partition.cuts());
  std::printf("partition: %d runs started during cuts on the majority side, %d on the cut-off side\n", majority,
              cut_side);
  std::printf("partition: %d end marks by SIGTERM, %d runs without an end mark, %d malformed marks\n", by_term,
              v.without_end, v.malformed_marks);
  std::printf("partition: %d tokens backwards, %d unfenced overlaps, %d fenced overlaps (allowed), %d lost grants "
              "(highest token %llu, last revision %s)\n",
              v.backwards, v.unfenced, v.fenced, v.lost, v.highest_token,
              v.last_revision ? std::to_string(*v.last_revision).c_str() : "unread");
  for (std::size_t i = 0; i < v.notes.size() && i < 30; ++i) std::printf("  %s\n", v.notes[i].c_str());
  const bool ok = v.backwards == 0 && v.unfenced == 0 && v.lost == 0 && !v.runs.empty();
  std::printf("partition: nats-server %s: %s (%zu cuts, %zu runs, %d backwards, %d unfenced, %d lost%s)\n",
              version.c_str(), ok ? "ok" : "FAIL", partition.cuts().size(), v.runs.size(), v.backwards, v.unfenced, v.lost,
              v.runs.empty() ? ", no runs at all" : "");
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  testing::use_built_git_module();
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
  std::string version = "?";
  std::optional<PartitionRun> partition;
  try {
    if (geteuid() != 0) throw SetupFailed("needs root (network namespaces, iptables)");
    const Options options = parse_options(argc, argv);
    version = server_version();
    const char* given = std::getenv("SWARM_PARTITION_RUN");
    const long run_number = given != nullptr && *given != '\0' ? std::atol(given) : static_cast<long>(getpid());
    std::printf("partition: nats-server %s, %d cuts of %d s with %d s to heal, lease TTL %s, %d s at most\n",
                version.c_str(), options.cuts, options.cut_seconds, options.heal_seconds, options.ttl.c_str(),
                options.max_seconds);
    std::fflush(stdout);
    try {
      partition.emplace(options, run_number);
      partition->start_servers();
      partition->up_workspace();
      partition->start_loopers();
    } catch (const SetupFailed& e) {
      std::printf("partition: nats-server %s: FAIL (setup: %s)%s\n", version.c_str(), e.what(),
                  partition ? ("; logs in " + partition->dir().string()).c_str() : "");
      return 2;
    }
    partition->run_cuts();
    const long long run_end = partition->stop_loopers();
    const Verdict verdict = partition->check(run_end);
    partition->stop_servers();
    const bool ok = print_summary(verdict, *partition, options, version);
    const fs::path dir = partition->dir();
    partition.reset();
    if (ok && std::getenv("SWARM_PARTITION_KEEP") == nullptr) fs::remove_all(dir);
    if (!ok || std::getenv("SWARM_PARTITION_KEEP") != nullptr)
      std::printf("partition: marks and logs kept in %s\n", dir.c_str());
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("partition: nats-server %s: FAIL (%s)%s\n", version.c_str(), e.what(),
                partition ? ("; logs in " + partition->dir().string()).c_str() : "");
    return 2;
  }
}
