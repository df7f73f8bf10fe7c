// swarm mcp: a Model Context Protocol server on standard input and output,
// newline-delimited JSON-RPC 2.0, answering revision 2025-11-25 (opened by
// `initialize`) and 2026-07-28 (`server/discover`, the version in each
// request's _meta). A tool of cli/verbs is its verb called as a function
// (calls run at once, each on a thread of its own); any other runs as the
// command line would (cli/mcp/tool_runs.h). Nothing but protocol reaches
// stdout: the verbs' own stdout is never the client's. The server keeps
// nothing between calls but a NATS connection (adr/0043).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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
#include "cli/mcp/protocol.h"
#include "cli/mcp/tool_results.h"
#include "cli/mcp/tool_runs.h"
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/exit_code.h"
#include "cli/verbs/verb.h"
#include "cli/verbs/version.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

using namespace mcp;

// A line longer than this is refused (and skipped to its end).
constexpr std::size_t kMaxLine = 16u << 20;

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
      swarm::Json result = mcp::answer_method(name, params, modern, tools_);
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
          result = result_of_run(*tool, ran, ttl_now());
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

  void progress(const cJSON* token, double done, const std::string& line) {
    swarm::Json params = swarm::Json::object();
    params.set("progressToken", swarm::Json::copy(token)).set("progress", done).set("message", line);
    swarm::Json m = swarm::Json::object();
    m.set("jsonrpc", "2.0").set("method", "notifications/progress").set("params", std::move(params));
    write_line(m);
  }

  // In this process, one call at a time.
  Ran run_here(const Tool& tool, const std::vector<std::string>& args) {
    std::lock_guard lock(here_mu_);
    return run_captured(run_command_line_, tool_argv(tool, globals_, args), err_fd_);
  }

  // As a process of its own (this binary), its stderr lines sent as
  // progress; a cancellation sends it SIGINT.
  Ran run_process(const Tool& tool, const std::vector<std::string>& args, const std::string& key,
                  const cJSON* token) {
    ChildHooks hooks;
    hooks.child = [this, key](pid_t pid) {
      std::lock_guard lock(calls_mu_);
      calls_[key].child = pid;
      if (pid != 0 && calls_[key].cancelled) ::kill(pid, SIGINT);
    };
    if (token != nullptr)
      hooks.progress = [this, token](double done, const std::string& line) { progress(token, done, line); };
    return run_child(tool_argv(tool, globals_, args), hooks);
  }

  // The session TTL of now (`up --ttl` changes it in place); the one at
  // start when the config cannot be read.
  TtlNow ttl_now() const {
    return [this] {
      try {
        return workspace_.load_config().ttl;
      } catch (const std::exception&) {
        return ttl_;
      }
    };
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
      if (r.exit != 0) {
        // A verb that answers with an exit code of its own (doctor's 8):
        // an error result with its document, as the command line's was.
        return error_result_of(exit_error(r.exit), std::move(doc));
      }
      return success_result(tool, std::move(doc), report.said(), ttl_now());
    } catch (const std::exception& thrown) {
      const swarm::Error e = swarm::Error::from(thrown);
      swarm::Json error = swarm::Json::object();
      error.set("schema", "swarm.error.v1").set("kind", swarm::to_string(e.kind()))
          .set("message", ctx.explained(e.kind(), e.what())).set("exit", exit_code_for(e.kind()));
      return error_result_of(std::move(error), verb.items ? report.items_document() : swarm::Json());
    }
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
