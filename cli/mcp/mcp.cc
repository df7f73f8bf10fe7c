// swarm mcp: a Model Context Protocol server on standard input and output,
// newline-delimited JSON-RPC 2.0, answering revision 2025-11-25 (opened by
// `initialize`) and 2026-07-28 (`server/discover`, the version in each
// request's _meta). Each tool call runs the verb as the command line would
// (cli/command_line.h) with --json: in this process, its stdout and stderr
// captured (one call at a time); or, for a verb that may wait long, as a
// process of its own that a cancellation stops as Ctrl-C would. Nothing but
// protocol reaches stdout: the verbs' own stdout is never the client's.
// The server keeps nothing between calls but a NATS connection (adr/0043).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "cli/mcp/mcp.h"
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/exit_code.h"
#include "cli/verbs/verb.h"
#include "cli/verbs/version.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

constexpr const char* kModern = "2026-07-28";
constexpr const char* kLegacy = "2025-11-25";
constexpr const char* kVersionKey = "io.modelcontextprotocol/protocolVersion";
// Earlier revisions a client may open with; the answer is the one it asked for.
const char* const kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
// A line longer than this is refused (and skipped to its end).
constexpr std::size_t kMaxLine = 16u << 20;
// With a progress token and no output, a long call says it still runs this often.
constexpr std::chrono::seconds kProgressBeat{5};

enum Code { kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601, kInvalidParams = -32602,
            kInternalError = -32603, kUnsupportedVersion = -32022 };

const cJSON* member(const cJSON* object, const char* name) {
  return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name) : nullptr;
}

// A JSON-RPC error, thrown by a handler; `data` optional.
struct RpcError {
  int code;
  std::string message;
  swarm::Json data;
};

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// What a verb run left: its exit code, stdout and stderr.
struct Ran {
  int exit = 0;
  std::string out;
  std::string err;
};

// The JSON lines of `text` (the others dropped).
std::vector<swarm::Json> json_lines(const std::string& text) {
  std::vector<swarm::Json> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line.empty() || line.front() != '{') continue;
    if (auto j = swarm::Json::parse(line)) out.push_back(std::move(j));
  }
  return out;
}

// The lines of `text` that are not JSON (warnings and notes of stderr).
std::string text_lines(const std::string& text) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    const std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line.empty() || line.front() == '{') continue;
    out += line + "\n";
  }
  return out;
}

// What a verb called here says: its warnings and notes as the command
// line would print them on stderr, its items gathered.
class CollectingReporter : public Reporter {
 public:
  void warn(const std::string& message) override {
    std::lock_guard lock(mu_);
    said_ += "swarm: warning: " + swarm::printable(message, true) + "\n";
  }
  void note(const std::string& message) override {
    std::lock_guard lock(mu_);
    said_ += "swarm: " + swarm::printable(message, true) + "\n";
  }
  bool item(const swarm::Json& doc, const std::string&) override {
    std::lock_guard lock(mu_);
    items_.push_back(swarm::Json::copy(doc.get()));
    return true;
  }
  std::string said() const {
    std::lock_guard lock(mu_);
    return said_;
  }
  swarm::Json items_document() {
    std::lock_guard lock(mu_);
    swarm::Json doc = swarm::Json::object();
    swarm::Json items = swarm::Json::array();
    for (auto& i : items_) items.push(std::move(i));
    items_.clear();
    doc.set("items", std::move(items));
    return doc;
  }

 private:
  mutable std::mutex mu_;
  std::string said_;
  std::vector<swarm::Json> items_;
};

class McpServer {
 public:
  explicit McpServer(McpSetup setup)
      : tools_(std::move(setup.tools)), globals_(std::move(setup.argv_globals)), direct_(std::move(setup.globals)),
        slot_(std::move(setup.slot)), workspace_(std::move(setup.workspace)),
        run_command_line_(std::move(setup.run_command_line)), ttl_(workspace_.load_config().ttl) {
    direct_.json = true;
  }

  int serve() {
    // The protocol's own stdout; fd 1 itself goes nowhere from now on, so
    // nothing a verb or a library prints can reach the client.
    rpc_fd_ = ::dup(STDOUT_FILENO);
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (rpc_fd_ < 0 || null < 0) throw swarm::Error(swarm::Errc::internal, "cannot set up stdout for the protocol");
    ::fcntl(rpc_fd_, F_SETFD, FD_CLOEXEC);
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
    err_fd_ = ::dup(STDERR_FILENO);
    ::fcntl(err_fd_, F_SETFD, FD_CLOEXEC);
    // The same for stdin: the protocol reads its own copy, and a verb that
    // reads its standard input (send's "-", a body file /dev/stdin) reads
    // nothing, never the requests that follow.
    in_fd_ = ::dup(STDIN_FILENO);
    ::fcntl(in_fd_, F_SETFD, FD_CLOEXEC);
    const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in_fd_ < 0 || null_in < 0) throw swarm::Error(swarm::Errc::internal, "cannot set up stdin for the protocol");
    ::dup2(null_in, STDIN_FILENO);
    ::close(null_in);
    std::string line;
    bool too_long = false;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(in_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] != '\n') {
          if (line.size() < kMaxLine) line.push_back(buf[i]);
          else too_long = true;
          continue;
        }
        if (too_long) send_error(nullptr, {kInvalidRequest, "a message longer than 16 MiB", {}});
        else if (!line.empty() && line != "\r") handle_line(line);
        line.clear();
        too_long = false;
      }
    }
    finish();
    return 0;
  }

 private:
  struct Call {
    bool own_process = false;
    pid_t child = 0;  // while it runs (0 once reaped: its pid may be another's)
    bool cancelled = false;
  };

  void finish() {
    // The client went: calls still running are stopped, as a Ctrl-C would.
    std::unique_lock lock(calls_mu_);
    for (auto& [id, call] : calls_)
      if (call.child > 0) ::kill(call.child, SIGINT);
    calls_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return running_ == 0; });
  }

  void write_line(const swarm::Json& message) {
    std::string text = message.dump();
    text.push_back('\n');
    std::lock_guard lock(write_mu_);
    for (std::size_t at = 0; at < text.size();) {
      const ssize_t n = ::write(rpc_fd_, text.data() + at, text.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd out{rpc_fd_, POLLOUT, 0};
        ::poll(&out, 1, 1000);
        continue;
      }
      if (n <= 0) return;  // the client is gone
      at += static_cast<std::size_t>(n);
    }
  }

  // Sets "id" as the client wrote it: a whole number printed whole (cJSON
  // would print 2^53-1 as 9.00719925474099e+15, which no client matches).
  static void set_id(swarm::Json& m, const cJSON* id) {
    if (id == nullptr) {
      m.set_null("id");
    } else if (cJSON_IsNumber(id) && std::fabs(id->valuedouble) < 9.2e18) {
      m.add_raw("id", std::to_string(static_cast<long long>(id->valuedouble)));
    } else {
      m.set("id", swarm::Json::copy(id));
    }
  }

  void send_result(const cJSON* id, swarm::Json result) {
    swarm::Json m = swarm::Json::object();
    m.set("jsonrpc", "2.0");
    set_id(m, id);
    m.set("result", std::move(result));
    write_line(m);
  }

  void send_error(const cJSON* id, const RpcError& e) {
    swarm::Json m = swarm::Json::object();
    m.set("jsonrpc", "2.0");
    set_id(m, id);
    swarm::Json err = swarm::Json::object();
    err.set("code", e.code).set("message", e.message);
    if (e.data) err.set("data", swarm::Json::copy(e.data.get()));
    m.set("error", std::move(err));
    write_line(m);
  }

  void handle_line(const std::string& line) {
    swarm::Json message = swarm::Json::parse(line);
    if (!message) return send_error(nullptr, {kParseError, "Parse error: the line is not one JSON value", {}});
    const cJSON* m = message.get();
    const cJSON* id = member(m, "id");
    if (id && !cJSON_IsString(id) && !(cJSON_IsNumber(id) && id->valuedouble == std::floor(id->valuedouble)))
      return send_error(nullptr, {kInvalidRequest, "Invalid Request: the id is neither a string nor an integer", {}});
    const cJSON* method = member(m, "method");
    if (!cJSON_IsObject(m) || !cJSON_IsString(member(m, "jsonrpc")) ||
        std::string(member(m, "jsonrpc")->valuestring) != "2.0") {
      if (cJSON_IsObject(m) && (member(m, "result") || member(m, "error"))) return;  // a response: nothing asked
      return send_error(id, {kInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 object", {}});
    }
    if (!cJSON_IsString(method)) {
      if (member(m, "result") || member(m, "error")) return;
      return send_error(id, {kInvalidRequest, "Invalid Request: no method", {}});
    }
    const std::string name = method->valuestring;
    const cJSON* params = member(m, "params");
    if (!id) {
      if (params == nullptr || cJSON_IsObject(params)) notified(name, params);
      return;  // a notification gets no answer, not even an error
    }
    if (params && !cJSON_IsObject(params)) return send_error(id, {kInvalidParams, "params is not an object", {}});
    try {
      const bool modern = is_modern(params);
      if (name == "tools/call") return call_tool(message, modern);  // answers on its own
      swarm::Json result = answer(name, params, modern);
      if (modern || name == "server/discover") result.set("resultType", "complete");
      send_result(id, std::move(result));
    } catch (const RpcError& e) {
      send_error(id, e);
    } catch (const std::exception& e) {
      send_error(id, {kInternalError, swarm::printable(e.what()), {}});
    }
  }

  // Whether the request is of revision 2026-07-28 (its version in _meta);
  // another version there is refused as the revision asks.
  static bool is_modern(const cJSON* params) {
    const cJSON* version = member(member(params, "_meta"), kVersionKey);
    if (!version) return false;
    if (!cJSON_IsString(version) || std::string(version->valuestring) != kModern) {
      swarm::Json data = swarm::Json::object();
      data.set("supported", swarm::Json::strings({kModern}));
      if (cJSON_IsString(version)) data.set("requested", version->valuestring);
      throw RpcError{kUnsupportedVersion, "Unsupported protocol version", std::move(data)};
    }
    return true;
  }

  void notified(const std::string& name, const cJSON* params) {
    if (name != "notifications/cancelled") return;  // initialized, progress, ...: nothing to do
    const cJSON* request = member(params, "requestId");
    if (!request) return;
    const std::string key = swarm::Json::copy(request).dump();
    std::lock_guard lock(calls_mu_);
    auto it = calls_.find(key);
    // A call in this process cannot be stopped part way: it is not
    // cancelled, and its result (a join's handle) is sent.
    if (it == calls_.end() || !it->second.own_process) return;
    it->second.cancelled = true;
    if (it->second.child > 0) ::kill(it->second.child, SIGINT);  // as Ctrl-C: a land leaves main as it was
  }

  swarm::Json server_info() const {
    swarm::Json info = swarm::Json::object();
    info.set("name", "swarm").set("version", std::string(kProgramVersion).substr(6));
    return info;
  }

  static swarm::Json capabilities() {
    swarm::Json tools = swarm::Json::object();
    tools.set("listChanged", false);
    swarm::Json caps = swarm::Json::object();
    caps.set("tools", std::move(tools));
    return caps;
  }

  static const char* instructions() {
    return "swarm coordinates coding agents on one workspace: join a slot (its session token is your handle; "
           "pass it as session), commit, sync, hold the paths you edit, send and read messages, close, land. "
           "Renew within the session's TTL (commit and sync renew too).";
  }

  swarm::Json answer(const std::string& name, const cJSON* params, bool modern) {
    if (name == "initialize") {
      const cJSON* asked = member(params, "protocolVersion");
      std::string version = kLegacy;
      for (const char* v : kLegacyVersions)
        if (cJSON_IsString(asked) && asked->valuestring == std::string(v)) version = v;
      swarm::Json r = swarm::Json::object();
      r.set("protocolVersion", version).set("capabilities", capabilities()).set("serverInfo", server_info())
          .set("instructions", instructions());
      return r;
    }
    if (name == "server/discover") {
      swarm::Json meta = swarm::Json::object();
      meta.set("io.modelcontextprotocol/serverInfo", server_info());
      swarm::Json r = swarm::Json::object();
      r.set("supportedVersions", swarm::Json::strings({kModern, kLegacy})).set("capabilities", capabilities())
          .set("instructions", instructions()).set("ttlMs", 0).set("cacheScope", "private")
          .set("_meta", std::move(meta));
      return r;
    }
    if (name == "ping") return swarm::Json::object();
    if (name == "tools/list") {
      swarm::Json list = swarm::Json::array();
      for (const auto& t : tools_) {
        swarm::Json tool = swarm::Json::object();
        tool.set("name", t.name).set("description", t.description)
            .set("inputSchema", swarm::Json::copy(t.input_schema.get()))
            .set("outputSchema", swarm::Json::copy(t.output_schema.get()));
        list.push(std::move(tool));
      }
      swarm::Json r = swarm::Json::object();
      r.set("tools", std::move(list));
      if (modern) r.set("ttlMs", 0).set("cacheScope", "private");
      return r;
    }
    throw RpcError{kMethodNotFound, "Method not found", swarm::Json::parse("\"" + swarm::printable(name) + "\"")};
  }

  // What a call that names none of them gets, as the command line would
  // in this process: the server's --slot (the slot, or the inbox it sends
  // from or reads), else the option's variable ($SWARM_SLOT, $SWARM_SESSION).
  void defaults_of(const VerbSpec& verb, swarm::Json& arguments) const {
    for (const auto& o : verb.options) {
      const std::string key = o.spec.key();
      if (member(arguments.get(), key.c_str()) != nullptr) continue;
      std::string value;
      if (!slot_.empty() && (key == "slot" || key == "from" || key == "as")) value = slot_;
      else if (const char* env = o.spec.env.empty() ? nullptr : std::getenv(o.spec.env.c_str())) value = env;
      if (value.empty()) continue;
      if (o.spec.kind == OptionSpec::Kind::texts) arguments.set(key.c_str(), swarm::Json::strings({value}));
      else arguments.set(key.c_str(), value);
    }
  }

  const Tool* tool_named(const std::string& name) const {
    for (const auto& t : tools_)
      if (t.name == name) return &t;
    return nullptr;
  }

  // tools/call: checked here (protocol errors), run on a thread of its own
  // (its answer sent when it ends, none when it was cancelled).
  void call_tool(const swarm::Json& message, bool modern) {
    const cJSON* id = member(message.get(), "id");
    const cJSON* params = member(message.get(), "params");
    const cJSON* name = member(params, "name");
    if (!cJSON_IsString(name)) throw RpcError{kInvalidParams, "tools/call without a tool name", {}};
    const Tool* tool = tool_named(name->valuestring);
    if (tool == nullptr)
      throw RpcError{kInvalidParams, "Unknown tool: " + swarm::printable(name->valuestring) + " (tools/list gives them)", {}};
    std::vector<std::string> args;
    const cJSON* arguments = member(params, "arguments");
    try {
      args = call_arguments(*tool, arguments);
    } catch (const swarm::Error& e) {
      throw RpcError{kInvalidParams, "Invalid params: " + std::string(e.what()), {}};
    }
    // The server's --slot for a call that names none: its slot, or the
    // inbox it sends from or reads.
    if (!slot_.empty())
      for (const char* key : {"slot", "from", "as"}) {
        const auto it = std::find_if(tool->args.begin(), tool->args.end(), [&](const ToolArg& a) { return a.key == key; });
        if (it == tool->args.end() || member(arguments, key) != nullptr) continue;
        args.insert(args.begin(), {it->option, slot_});
      }
    // A lease is the agent host's, whose life outlives this server's.
    if (tool->name == "lease_acquire" && member(arguments, "pid") == nullptr)
      args.insert(args.begin(), {"--pid", std::to_string(::getppid())});
    // A verb of cli/verbs that does not wait is a function called here;
    // what may wait (a land's check, an inbox's or a join's --wait) runs as
    // a process of its own: cancellable, and never holding up other calls.
    const bool waits = member(arguments, "wait") != nullptr;
    const VerbSpec* typed = tool->fixed.empty() ? typed_verb_named(tool->name) : nullptr;
    if (typed != nullptr && (waits || tool->name == "ask")) typed = nullptr;
    const bool own = typed == nullptr && (tool->own_process || waits);
    auto direct_arguments = std::make_shared<swarm::Json>(
        cJSON_IsObject(arguments) ? swarm::Json::copy(arguments) : swarm::Json::object());
    if (typed != nullptr) defaults_of(*typed, *direct_arguments);
    const cJSON* token = member(member(params, "_meta"), "progressToken");
    auto work = std::make_shared<swarm::Json>(swarm::Json::copy(message.get()));
    const std::string key = swarm::Json::copy(id).dump();
    {
      std::lock_guard lock(calls_mu_);
      if (calls_.count(key) != 0) throw RpcError{kInvalidRequest, "a call with this id is still running", {}};
      calls_[key] = Call{own, 0, false};
      ++running_;
    }
    std::thread([this, tool, typed, direct_arguments, args, key, modern, work, own, has_token = token != nullptr] {
      const cJSON* wid = member(work->get(), "id");
      const cJSON* wtoken = has_token ? member(member(member(work->get(), "params"), "_meta"), "progressToken") : nullptr;
      swarm::Json result;
      try {
        if (typed != nullptr) {
          result = run_direct(*tool, *typed, *direct_arguments);
        } else {
          const Ran ran = own ? run_process(*tool, args, key, wtoken) : run_here(*tool, args);
          result = result_of(*tool, ran);
        }
      } catch (const std::exception& e) {
        result = error_result(swarm::Errc::internal, e.what(), {});
      }
      if (modern) result.set("resultType", "complete");
      bool cancelled;
      {
        std::lock_guard lock(calls_mu_);
        cancelled = calls_[key].cancelled;
        calls_.erase(key);
      }
      if (!cancelled) send_result(wid, std::move(result));
      std::lock_guard lock(calls_mu_);
      --running_;
      calls_cv_.notify_all();
    }).detach();
  }

  std::vector<std::string> argv_of(const Tool& tool, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"swarm"};
    argv.insert(argv.end(), tool.words.begin(), tool.words.end());
    argv.insert(argv.end(), globals_.begin(), globals_.end());
    argv.push_back("--json");
    argv.insert(argv.end(), tool.fixed.begin(), tool.fixed.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // In this process, one call at a time: fd 1 and 2 captured for its run.
  Ran run_here(const Tool& tool, const std::vector<std::string>& args) {
    std::vector<std::string> argv = argv_of(tool, args);
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    std::lock_guard lock(here_mu_);
    const int out = ::memfd_create("swarm-mcp-out", MFD_CLOEXEC), err = ::memfd_create("swarm-mcp-err", MFD_CLOEXEC);
    if (out < 0 || err < 0) throw swarm::Error(swarm::Errc::filesystem, "cannot capture a verb's output (memfd)");
    std::cout.flush();
    std::fflush(stdout);
    std::cerr.flush();
    std::fflush(stderr);
    const int saved_out = ::dup(STDOUT_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    Ran ran;
    try {
      ran.exit = run_command_line_(static_cast<int>(argv.size()), raw.data());
    } catch (const std::exception& e) {
      ran.exit = kInternal;
      std::cerr << "swarm: error: " << e.what() << "\n";
    }
    std::cout.flush();
    std::fflush(stdout);
    std::cerr.flush();
    std::fflush(stderr);
    ::dup2(saved_out, STDOUT_FILENO);
    ::dup2(err_fd_, STDERR_FILENO);
    ::close(saved_out);
    ran.out = read_all(out);
    ran.err = read_all(err);
    ::close(out);
    ::close(err);
    return ran;
  }

  void progress(const cJSON* token, double done, const std::string& line) {
    swarm::Json params = swarm::Json::object();
    params.set("progressToken", swarm::Json::copy(token)).set("progress", done).set("message", line);
    swarm::Json m = swarm::Json::object();
    m.set("jsonrpc", "2.0").set("method", "notifications/progress").set("params", std::move(params));
    write_line(m);
  }

  // As a process of its own (this binary), its stderr lines sent as
  // progress; a cancellation sends it SIGINT.
  Ran run_process(const Tool& tool, const std::vector<std::string>& args, const std::string& key,
                  const cJSON* token) {
    std::vector<std::string> argv = argv_of(tool, args);
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      for (int fd : {in, out[0], out[1], err[0], err[1]})
        if (fd >= 0) ::close(fd);
      throw swarm::Error(swarm::Errc::filesystem, "cannot make pipes for a tool's process");
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(in, STDIN_FILENO);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      // Nothing of the server's (its NATS socket, the protocol's pipes) goes along.
      ::close_range(3, ~0U, 0);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execv("/proc/self/exe", raw.data());
      ::_exit(127);
    }
    ::close(in);
    if (pid < 0) {
      for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
      throw swarm::Error(swarm::Errc::internal, "cannot start a tool's process");
    }
    ::close(out[1]);
    ::close(err[1]);
    {
      std::lock_guard lock(calls_mu_);
      calls_[key].child = pid;
      if (calls_[key].cancelled) ::kill(pid, SIGINT);
    }
    Ran ran;
    std::string pending;
    double done = 0;
    auto last = std::chrono::steady_clock::now();
    const auto started = last;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      ::poll(fds, 2, 1000);
      char buf[65536];
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
          continue;
        }
        (i == 0 ? ran.out : ran.err).append(buf, static_cast<std::size_t>(n));
        if (i == 1 && token) {
          pending.append(buf, static_cast<std::size_t>(n));
          for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
            const std::string line = pending.substr(0, nl);
            if (!line.empty() && line.front() != '{') progress(token, ++done, swarm::printable(line));
            last = std::chrono::steady_clock::now();
          }
        }
      }
      if (token && std::chrono::steady_clock::now() - last >= kProgressBeat) {
        last = std::chrono::steady_clock::now();
        progress(token, ++done, "still running (" + swarm::format_duration(std::chrono::duration_cast<std::chrono::seconds>(
                                                        last - started)) + ")");
      }
    }
    {
      // Its output ended: from now on no cancellation signals this pid,
      // which may be another process's once it is reaped.
      std::lock_guard lock(calls_mu_);
      calls_[key].child = 0;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    ran.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return ran;
  }

  swarm::Json error_result(swarm::Errc kind, const std::string& message, swarm::Json doc) const {
    swarm::Json error = swarm::Json::object();
    error.set("schema", "swarm.error.v1").set("kind", swarm::to_string(kind)).set("message", swarm::printable(message))
        .set("exit", exit_code_for(kind));
    return error_result_of(std::move(error), std::move(doc));
  }

  static swarm::Json error_result_of(swarm::Json error, swarm::Json doc) {
    std::string text = "error: ";
    if (const cJSON* m = member(error.get(), "message"); cJSON_IsString(m)) text += m->valuestring;
    if (doc) error.set("result", std::move(doc));
    swarm::Json content = swarm::Json::array();
    swarm::Json item = swarm::Json::object();
    item.set("type", "text").set("text", text);
    content.push(std::move(item));
    swarm::Json r = swarm::Json::object();
    r.set("content", std::move(content)).set("structuredContent", std::move(error)).set("isError", true);
    return r;
  }

  // The handle a join or a lease's grant returns: its token, its lifetime
  // and how to keep it.
  swarm::Json handle_of(const Tool& tool, const swarm::Json& doc) const {
    swarm::Json h = swarm::Json::object();
    if (tool.words.front() == "join") {  // join, task_next
      const cJSON* token = member(doc.get(), "session_token");
      const cJSON* slot = member(doc.get(), "slot");
      // The TTL of now (`up --ttl` changes it in place).
      std::chrono::milliseconds ttl = ttl_;
      try {
        ttl = workspace_.load_config().ttl;
      } catch (const std::exception&) {
      }
      const auto every = std::chrono::duration_cast<std::chrono::seconds>(ttl / 3);
      h.set("kind", "session").set("token", token ? swarm::Json::copy(token) : swarm::Json())
          .set("slot", cJSON_IsString(slot) ? slot->valuestring : "")
          .set("ttl_seconds", static_cast<double>(ttl.count()) / 1000.0)
          .set("keep", "pass it as session to commit, sync, renew, hold, close and land; call renew at least every " +
                           swarm::format_duration(every) + " (commit and sync renew too). Once another session "
                           "replaces it, every call with it is an error: join again");
      return h;
    }
    const cJSON* leases = member(doc.get(), "leases");
    const cJSON* lease = cJSON_GetArrayItem(leases, 0);
    const cJSON* ttl_ms = member(lease, "ttl_ms");
    h.set("kind", "fencing").set("lease", cJSON_IsString(member(lease, "name")) ? member(lease, "name")->valuestring : "")
        .set("token", member(lease, "token") ? swarm::Json::copy(member(lease, "token")) : swarm::Json())
        .set("ttl_seconds", cJSON_IsNumber(ttl_ms) ? ttl_ms->valuedouble / 1000.0 : 0.0)
        .set("keep", "call lease_renew with name and token before the TTL ends, lease_release when done; pass the "
                     "token to whatever you write so a stale holder's writes can be refused");
    return h;
  }

  // A verb of cli/verbs, called: its request read from the arguments by
  // its table, its result the document, what it said the text's warnings.
  swarm::Json run_direct(const Tool& tool, const VerbSpec& verb, const swarm::Json& arguments) const {
    Context ctx(direct_);  // its standard input /dev/null (serve() made it so), never the protocol's
    CollectingReporter report;
    try {
      auto request = request_from_json(verb, arguments.get(), tool.name);
      verb.resolve(request.get(), ctx);
      VerbResult r = run_verb(verb, request.get(), ctx, report);
      swarm::Json doc = verb.items              ? report.items_document()
                        : !r.rendered.empty() ? swarm::Json::parse(r.rendered)
                                              : with_schema(r.verb, std::move(r.doc));
      return success_result(tool, std::move(doc), report.said());
    } catch (const std::exception& thrown) {
      const swarm::Error e = swarm::Error::from(thrown);
      swarm::Json error = swarm::Json::object();
      error.set("schema", "swarm.error.v1").set("kind", swarm::to_string(e.kind()))
          .set("message", ctx.explained(e.kind(), e.what())).set("exit", exit_code_for(e.kind()));
      return error_result_of(std::move(error), verb.items ? report.items_document() : swarm::Json());
    }
  }

  swarm::Json success_result(const Tool& tool, swarm::Json doc, const std::string& warnings) const {
    if (tool.handle) doc.set("handle", handle_of(tool, doc));
    swarm::Json content = swarm::Json::array();
    swarm::Json item = swarm::Json::object();
    item.set("type", "text").set("text", doc.dump() + (warnings.empty() ? "" : "\n" + warnings));
    content.push(std::move(item));
    swarm::Json r = swarm::Json::object();
    r.set("content", std::move(content)).set("structuredContent", std::move(doc)).set("isError", false);
    return r;
  }

  swarm::Json result_of(const Tool& tool, const Ran& ran) const {
    // The document: one JSON object on stdout, or JSON Lines as items.
    swarm::Json doc;
    if (tool.lines) {
      doc = swarm::Json::object();
      swarm::Json items = swarm::Json::array();
      for (auto& j : json_lines(ran.out)) items.push(std::move(j));
      doc.set("items", std::move(items));
    } else {
      auto docs = json_lines(ran.out);
      if (!docs.empty()) doc = std::move(docs.back());
    }
    const std::string warnings = text_lines(ran.err);
    if (ran.exit != 0) {
      // swarm's own error is the last line it writes: a line a command or
      // a check printed before it is theirs, never taken for swarm's.
      swarm::Json error;
      std::string last = ran.err;
      while (!last.empty() && last.back() == '\n') last.pop_back();
      last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
      if (auto j = swarm::Json::parse(last))
        if (const cJSON* s = member(j.get(), "schema"); cJSON_IsString(s) && std::string(s->valuestring) == "swarm.error.v1")
          error = std::move(j);
      if (error) {
        cJSON_DeleteItemFromObject(error.get(), "exit");
        error.set("exit", ran.exit);
      } else {
        error = swarm::Json::object();
        error.set("schema", "swarm.error.v1").set("kind", "internal")
            .set("message", warnings.empty() ? "exit " + std::to_string(ran.exit) : swarm::printable(warnings))
            .set("exit", ran.exit);
      }
      return error_result_of(std::move(error), std::move(doc));
    }
    if (!doc) {
      doc = swarm::Json::object();
      doc.set("schema", "swarm." + tool.words.front() + ".v1").set("text", ran.out);
    }
    return success_result(tool, std::move(doc), warnings);
  }

  std::vector<Tool> tools_;
  std::vector<std::string> globals_;
  Globals direct_;
  std::string slot_;
  swarm::Workspace workspace_;
  std::function<int(int, char**)> run_command_line_;
  std::chrono::milliseconds ttl_;  // at start: what a handle says when the config cannot be read
  int rpc_fd_ = -1;
  int err_fd_ = -1;
  int in_fd_ = -1;
  std::mutex write_mu_;
  std::mutex here_mu_;
  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  std::map<std::string, Call> calls_;
  int running_ = 0;
};

}  // namespace

int serve_mcp(McpSetup setup) {
  // Never destroyed: a call still running when the client leaves may use it
  // until the process exits (main exits at once).
  auto* server = new McpServer(std::move(setup));
  return server->serve();
}

}  // namespace cli
