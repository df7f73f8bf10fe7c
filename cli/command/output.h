// What a verb prints: the result on stdout (human text, or exactly one JSON
// document with --json), diagnostics on stderr.
#pragma once

#include <string>
#include <vector>

#include "swarm/base/error.h"
#include "swarm/base/json.h"

namespace cli {

class Output {
 public:
  explicit Output(bool json) : json_(json) {}
  bool json() const { return json_; }

  // Prints the result: `human` (a trailing newline is added when missing), or
  // `doc` with its "schema" set to swarm.<verb>.v1.
  void result(const std::string& verb, const std::string& human, swarm::Json doc) const;
  // A result already rendered (human text, or a JSON document that carries its
  // schema): for results too large to build twice.
  void rendered(const std::string& text) const;
  // One line of JSON on stdout, flushed (for streams such as status --watch).
  void json_line(const swarm::Json& doc) const;
  // "swarm: warning: ..." on stderr.
  void warn(const std::string& message) const;
  // "swarm: ..." on stderr: progress and notes that are not the result.
  void note(const std::string& message) const;
  // The error on stderr (as swarm.error.v1 with --json); returns its exit code.
  int error(swarm::Errc kind, const std::string& message) const;

 private:
  bool json_;
};

// Rows of cells (already escaped) as columns two spaces apart, each as
// wide as its widest cell (in terminal columns), one line per row.
std::string aligned(const std::vector<std::vector<std::string>>& rows);

}  // namespace cli
