// swarm mcp's tool calls against the same verbs run as processes: the
// server is already running (its NATS connection made, the git module
// loaded), so a call should cost no more than spawning the verb.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/bench_cases.h"
#include "cli/verbs/verb.h"

namespace bench {

namespace {

// `swarm mcp` on two pipes: a request written, its answer line read.
class McpPipe {
 public:
  McpPipe(const std::string& swarm, const std::vector<std::string>& env_extra) {
    // Everything the child needs made before the fork: this process has
    // NATS threads, and a child of it may not allocate.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) env_strings.push_back(*e);
    env_strings.insert(env_strings.end(), env_extra.begin(), env_extra.end());
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string program = swarm, verb = "mcp";
    char* argv[] = {program.data(), verb.data(), nullptr};
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) fail("pipes for swarm mcp");
    const int null = ::open("/dev/null", O_WRONLY);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(null, 2);
      ::close(in[1]);
      ::close(out[0]);
      ::execve(argv[0], argv, envp.data());
      ::_exit(127);
    }
    ::close(null);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~McpPipe() {
    ::close(to_);
    ::close(from_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  std::string ask(const std::string& line) {
    const std::string text = line + "\n";
    if (::write(to_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) fail("write to swarm mcp");
    for (;;) {
      if (auto nl = pending_.find('\n'); nl != std::string::npos) {
        std::string answer = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return answer;
      }
      char buf[65536];
      const ssize_t n = ::read(from_, buf, sizeof buf);
      if (n <= 0) fail("swarm mcp ended");
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string pending_;
};

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

// 39. A tools/call of `status` (and of `renew`) to a running `swarm mcp`,
// against `swarm status --json` (and `swarm renew`) as processes.
void mcp_tool_call(Bench& b) {
  const std::vector<std::string> env = {b.ws_env, "SWARM_HOST=bench-host", "SWARM_HOST_ID=bench-id"};
  if (run_process({b.swarm_bin, "join", "--slot", "mcp", "--task", "T-mcp"}, env).exit != 0) fail("join for mcp failed");
  McpPipe mcp(b.swarm_bin, env);
  if (mcp.ask(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
              R"("capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})")
          .find("\"result\"") == std::string::npos)
    fail("swarm mcp did not initialize");
  const int n = b.quick ? 10 : 40;
  struct Verb {
    const char* name;
    std::string call;
    std::vector<std::string> process;
  };
  const std::vector<Verb> verbs = {
      {"status", R"("name":"status","arguments":{})", {b.swarm_bin, "status", "--json"}},
      {"renew", R"("name":"renew","arguments":{"slot":"mcp"})", {b.swarm_bin, "renew", "--slot", "mcp", "--json"}}};
  for (const auto& verb : verbs) {
    std::vector<double> call_ms, process_ms;
    for (int i = 0; i < n + 2; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const std::string answer =
          mcp.ask(R"({"jsonrpc":"2.0","id":)" + std::to_string(i + 1) + R"(,"method":"tools/call","params":{)" +
                  verb.call + "}}");
      const auto end = std::chrono::steady_clock::now();
      if (answer.find("\"isError\":false") == std::string::npos) fail(std::string("mcp ") + verb.name + " failed");
      auto p = run_process(verb.process, env);
      if (p.exit != 0) fail(std::string(verb.name) + " failed");
      if (i < 2) continue;
      call_ms.push_back(ms_between(start, end));
      process_ms.push_back(p.ms);
    }
    Row row{.name = std::string("swarm mcp: tools/call ") + verb.name, .swarm = stats_of(call_ms),
            .baseline = stats_of(process_ms), .target = "<= 0.5x"};
    finish(row, 0.5);
    row.note = std::to_string(n) + " each; baseline: swarm " + verb.name + " --json as a process";
    b.rows.push_back(row);
    // The same call against the verb's function called here (cli/verbs, a
    // shared connection as the server's): what the protocol adds.
    std::vector<double> here_ms;
    cli::share_connections();
    ::setenv("SWARM_HOST", "bench-host", 1);  // this process acts as the server's host
    ::setenv("SWARM_HOST_ID", "bench-id", 1);
    const cli::VerbSpec& spec = *cli::typed_verb_named(verb.name);
    struct Quiet : cli::Reporter {
      void warn(const std::string&) override {}
      void note(const std::string&) override {}
      bool item(const swarm::Json&, const std::string&) override { return true; }
    } quiet;
    for (int i = 0; i < n + 2; ++i) {
      const auto start = std::chrono::steady_clock::now();
      cli::Globals globals;
      globals.workspace = b.ws_env.substr(b.ws_env.find('=') + 1);
      globals.json = true;
      cli::Context ctx(globals);
      swarm::Json args = swarm::Json::object();
      if (std::string(verb.name) == "renew") args.set("slot", "mcp");
      auto request = cli::request_from_json(spec, args.get(), verb.name);
      const std::string doc = cli::document_text(cli::run_verb(spec, request.get(), ctx, quiet));
      if (doc.find("\"schema\"") == std::string::npos) fail(std::string("in-process ") + verb.name + " failed");
      if (i >= 2) here_ms.push_back(ms_between(start, std::chrono::steady_clock::now()));
    }
    Row here{.name = std::string("swarm mcp: tools/call ") + verb.name + " vs the function", .swarm = stats_of(call_ms),
             .baseline = stats_of(here_ms), .target = "<= 1.2x"};
    finish(here, 1.2);
    here.note = "baseline: the verb's function called in-process (cli/verbs), one shared connection";
    b.rows.push_back(here);
  }
}

}  // namespace bench
