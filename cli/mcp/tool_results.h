// What a tool call answers (cli/mcp/): a tool's result made of a verb's
// document and what it said, of an error, or of what a verb run as the
// command line left on stdout and stderr; and the handle a join or a
// lease's grant adds. Nothing here runs a verb or speaks the protocol.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cli/mcp/mcp_tools.h"
#include "cli/verbs/verb.h"
#include "swarm/base/error.h"
#include "swarm/base/json.h"

namespace cli {

// What a verb run as the command line left: its exit code, stdout and stderr.
struct Ran {
  int exit = 0;
  std::string out;
  std::string err;
};

// What a verb called as a function says: its warnings and notes as the
// command line would print them on stderr, its items gathered.
class CollectingReporter : public Reporter {
 public:
  void warn(const std::string& message) override;
  void note(const std::string& message) override;
  bool item(const swarm::Json& doc, const std::string& line) override;
  std::string said() const;
  // {"items": [...]}, the items taken.
  swarm::Json items_document();

 private:
  mutable std::mutex mu_;
  std::string said_;
  std::vector<swarm::Json> items_;
};

// The session TTL a join's handle states, read when one is made.
using TtlNow = std::function<std::chrono::milliseconds()>;

// A tool's result: `doc` as its structured content (with its handle when
// the tool gives one), the document and the warnings as its text.
swarm::Json success_result(const Tool& tool, swarm::Json doc, const std::string& warnings, const TtlNow& ttl);
// An error result: a swarm.error.v1 of `kind` and `message`, with `doc`
// (what the verb made before it failed) as its result when there is one.
swarm::Json error_result(swarm::Errc kind, const std::string& message, swarm::Json doc);
// The same for a swarm.error.v1 already made.
swarm::Json error_result_of(swarm::Json error, swarm::Json doc);
// The swarm.error.v1 of an exit code swarm said no error of its own for
// (kind internal): `message`, or "exit N" when it is empty.
swarm::Json exit_error(int exit, const std::string& message = "");
// The result of a verb run as the command line: its last JSON line (or
// every one, for a tool of lines), its stderr's text lines as warnings,
// swarm's own error when it failed.
swarm::Json result_of_run(const Tool& tool, const Ran& ran, const TtlNow& ttl);

}  // namespace cli
