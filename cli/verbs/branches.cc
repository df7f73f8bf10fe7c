// swarm branches: the slot branches of the hub, with their live state, last
// result, lane, task and review, whether they landed, and the conflicts a
// merge of each unlanded one foresees.
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"

namespace cli {

namespace {

struct BranchesRequest {
  std::string onto;
};

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

std::string branches_table(const swarm::Branches& report) {
  if (report.rows.empty()) return "no slot branches on the hub";
  std::string text = padded("SLOT", 20) + " " + padded("STATE", 7) + " " + padded("RESULT", 8) + " " +
                     padded("LANE", 6) + " " + padded("AHEAD", 6) + " " + padded("LANDED", 7) + " " +
                     padded("HEAD", 12) + " " + padded("COMMITTED", 24) + " " + padded("TASK", 24) + " REVIEW\n";
  std::string foreseen;
  std::string refused;
  for (const auto& row : report.rows) {
    text += padded(swarm::printable(row.git.slot), 20) + " " +
            padded(row.state ? std::string(swarm::to_string(*row.state)) : "-", 7) + " " +
            padded(row.result.empty() ? "-" : swarm::printable(row.result), 8) + " " +
            padded(row.priority_high ? "high" : "normal", 6) + " " + padded(std::to_string(row.git.ahead), 6) + " " +
            padded(row.git.landed ? "yes" : row.refused ? "refused" : "no", 7) + " " +
            padded(row.git.head.substr(0, 12), 12) + " " +
            padded(swarm::format_rfc3339(swarm::TimePoint(std::chrono::seconds(row.git.committed_at))), 24) + " " +
            padded(row.task ? swarm::printable(row.task->id) + " " + row.task->state_text : "-", 24) + " " +
            (row.review.empty() ? "-" : row.review) + "\n";
    if (!row.conflicts.empty()) foreseen += swarm::printable(row.git.slot) + ":\n" + overlaps_text(row.conflicts, "  ");
    if (row.refused)
      refused += swarm::printable(row.git.slot) + ": " + swarm::standing_refusal_text(*row.refused) + "\n";
  }
  if (!foreseen.empty()) text += "\nconflicts foreseen (were each pair landed):\n" + foreseen;
  if (!refused.empty()) text += "\nrefused (lands skip them until their branch moves):\n" + refused;
  text.pop_back();
  return text;
}

VerbResult branches(const BranchesRequest& r, Context& ctx, Reporter&) {
  auto landing = ctx.landing();
  const swarm::Branches report = landing.branches(landing.onto(r.onto));
  VerbResult out;
  out.doc = branches_of(report);
  out.text = branches_table(report);
  return out;
}

}  // namespace

OptionSpec onto_option(std::string help) {
  return {.name = "--onto",
          .value_name = "BRANCH",
          .help = std::move(help),
          .check = [](const std::string& b) { swarm::require_branch_name(b, "--onto"); }};
}

VerbSpec branches_verb() {
  auto options = OptionTable<BranchesRequest>()
                     .text(&BranchesRequest::onto, onto_option("The branch work lands on (default: the hub's default "
                                                               "branch)"))
                     .done();
  return make_verb<BranchesRequest>(
      {"branches"}, "Every slot branch of the hub: live state, last result, commits ahead, landed or not",
      "Columns: SLOT STATE RESULT LANE AHEAD LANDED HEAD COMMITTED TASK REVIEW. STATE is the live session's (- when\n"
      "none); RESULT the last close's (from the journal); LANE high when it closed with --priority high;\n"
      "AHEAD the commits the onto branch lacks; LANDED whether the branch's tip is in the onto branch, or\n"
      "refused: a check refused it at the head it still has, and every land refuses it until it moves.\n"
      "TASK is the queued task of its last close and that task's state; REVIEW its review against the\n"
      "branch's tip: approved, dismissed (approved at an older head), rejected, waiting (in_review).\n"
      "Below the table, each unlanded branch's foreseen conflicts: the other unlanded slot branches and\n"
      "the onto branch a merge with it leaves in conflict, and on which paths. With --json:\n"
      "swarm.branches.v1 (conflicts: [{with, slot, paths}]).",
      std::move(options), {}, {}, branches);
}

}  // namespace cli
