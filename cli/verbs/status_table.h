// The sessions table as people read it, in one place for every view of it:
// `status` (a terminal's width, or as wide as it takes), `status --watch`
// (redrawn in place) and `serve` (its summary line): widths shared between
// task and host (the wider gives first; the host cut in the middle), cells
// escaped, states coloured on a terminal, one summary line.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "swarm/slots/status.h"

namespace cli {

// How the table is drawn: at most `width` columns (0: as wide as it takes;
// task and host are cut with "…" to fit, never the slot), states coloured,
// and a summary line at its end (a live view that shows only part of the
// rows says its own).
struct TableStyle {
  std::size_t width = 0;
  bool color = false;
  bool summary = true;
};

// "12 sessions: 10 fresh, 1 late, 1 stale; 3 hosts"
std::string summary(const std::vector<swarm::SessionRow>& rows);
// The table, written line by line to `out` in pieces (at 100,000 sessions no
// cell grid and no whole text is kept); its summary line last unless the
// style says not.
void write_table(std::ostream& out, const std::vector<swarm::SessionRow>& rows, const TableStyle& style = {});
// The same, as one text.
std::string table(const std::vector<swarm::SessionRow>& rows, const TableStyle& style = {});

}  // namespace cli
