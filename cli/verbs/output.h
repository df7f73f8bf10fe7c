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

// The terminal stdout is, if it is one: its size; else $COLUMNS (and
// $LINES) when set; else 0 (as wide and as long as it takes). Colour on a
// terminal unless $NO_COLOR or TERM=dumb.
// Where a verb's text goes, read where the request is made.
struct Presentation {
  std::size_t columns = 0;  // 0: as wide as it takes
  std::size_t lines = 0;
  bool tty = false;
  bool color = false;
};
Presentation terminal_presentation();

// Rows of cells (already escaped) as columns two spaces apart, each as
// wide as its widest cell (in terminal columns), one line per row.
std::string aligned(const std::vector<std::vector<std::string>>& rows);

}  // namespace cli
