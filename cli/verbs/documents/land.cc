// The landing documents: swarm.branches.v1 (`branches --json`, /api/branches,
// the branches tool), a land's result (`land --json`, the land tool), and
// the foreseen conflicts commit and branches give.
#include "cli/verbs/documents/documents.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

// The slot a foreseen conflict is with (a parked task's branch is its
// slot's): "" for the onto branch.
std::string slot_of_branch(const std::string& branch) {
  return branch.rfind("swarm/", 0) == 0 ? swarm::lane_slot(branch.substr(6)) : "";
}

swarm::Json branch_json(const swarm::BranchRow& row) {
  swarm::Json b = swarm::Json::object();
  // A parked task's branch (swarm/<slot>.<key>) is its slot's too.
  b.set("slot", swarm::lane_slot(row.git.slot))
      .set("branch", "swarm/" + row.git.slot)
      .set("parked", swarm::is_parked_lane(row.git.slot));
  if (row.task_id.empty()) b.set_null("task_id");
  else b.set("task_id", row.task_id);
  if (row.state) b.set("state", swarm::to_string(*row.state));
  else b.set_null("state");
  if (row.result.empty()) b.set_null("result");
  else b.set("result", row.result);
  b.set("ahead", static_cast<std::int64_t>(row.git.ahead))
      .set("landed", row.git.landed)
      .set("head", row.git.head)
      .set("committed_at", swarm::format_rfc3339(swarm::TimePoint(std::chrono::seconds(row.git.committed_at))))
      .set("priority", row.priority_high ? "high" : "normal")
      .set("conflicts", overlaps_json(row.conflicts));
  if (row.task) {
    swarm::Json task = swarm::Json::object();
    task.set("id", row.task->id).set("state", row.task->state_text);
    b.set("task", std::move(task));
  } else {
    b.set_null("task");
  }
  if (row.review.empty()) b.set_null("review");
  else b.set("review", row.review);
  if (!row.refused) {
    b.set_null("refused");
  } else {
    swarm::Json refused = swarm::Json::object();
    refused.set("head", row.refused->head).set("reason", row.refused->reason).set("onto", row.refused->onto);
    if (row.refused->reason == "check") refused.set("status", row.refused->status);
    b.set("refused", std::move(refused));
  }
  return b;
}



}  // namespace

// The document of a listing of branches, without its schema (`branches` sets it).
swarm::Json branches_of(const swarm::Branches& report) {
  swarm::Json doc = swarm::Json::object();
  doc.set("onto", report.onto);
  swarm::Json rows = swarm::Json::array();
  for (const auto& row : report.rows) rows.push(branch_json(row));
  doc.set("branches", std::move(rows));
  return doc;
}

namespace {

std::string short_id(const std::string& id) { return id.substr(0, 12); }

}  // namespace

std::string land_summary(const swarm::LandResult& r) {
  switch (r.outcome) {
    case swarm::LandResult::Outcome::landed:
      return "landed " + r.slot + " on " + swarm::printable(r.onto) + " (" + r.kind +
             (r.batch.empty() ? "" : ", batch " + r.batch) +
             (r.check == "flaky" ? ", check flaky: passed on run " + std::to_string(r.check_attempts) : "") +
             "): " + short_id(r.from) + " -> " + short_id(r.to);
    case swarm::LandResult::Outcome::already_landed:
      return "slot " + r.slot + " is landed on " + swarm::printable(r.onto) + " already (" + short_id(r.from) + ")";
    case swarm::LandResult::Outcome::refused: return "refused " + r.slot + ": " + r.message;
  }
  return "";
}

swarm::Json land_document(const swarm::LandResult& r) {
  swarm::Json doc = swarm::Json::object();
  doc.set("slot", swarm::lane_slot(r.slot))
      .set("onto", r.onto)
      .set("outcome", swarm::to_string(r.outcome))
      .set("how", r.kind)
      .set("from", r.from)
      .set("to", r.to)
      .set("fencing_token", static_cast<std::int64_t>(r.token))
      .set("attempts", r.attempts)
      .set("branch", "swarm/" + r.slot);
  if (!r.head.empty()) doc.set("head", r.head);
  if (r.batch.empty()) doc.set_null("batch");
  else doc.set("batch", r.batch);
  if (r.forced) doc.set("forced", true);
  if (r.no_check) doc.set("no_check", true);
  if (!r.check.empty()) doc.set("check", r.check).set("check_attempts", r.check_attempts);
  if (r.outcome == swarm::LandResult::Outcome::refused) {
    doc.set("reason", r.reason);
    if (r.reason == "conflict" || r.reason == "hold") {
      doc.set("paths", swarm::Json::strings(r.paths));
    } else {
      doc.set("status", r.check_status);
    }
  }
  return doc;
}



swarm::Json branches_document(const swarm::Branches& report) { return with_schema("branches", branches_of(report)); }

swarm::Json overlaps_json(const std::vector<swarm::Overlap>& overlaps) {
  swarm::Json out = swarm::Json::array();
  for (const auto& o : overlaps) {
    swarm::Json item = swarm::Json::object();
    item.set("with", o.with);
    if (const std::string slot = slot_of_branch(o.with); slot.empty()) item.set_null("slot");
    else item.set("slot", slot);
    item.set("paths", swarm::Json::strings(o.paths));
    out.push(std::move(item));
  }
  return out;
}

std::string overlaps_text(const std::vector<swarm::Overlap>& overlaps, const std::string& indent) {
  std::string out;
  for (const auto& o : overlaps) {
    const std::string slot = slot_of_branch(o.with);
    std::string paths;
    for (const auto& p : o.paths) paths += (paths.empty() ? "" : ", ") + swarm::printable(p);
    out += indent + "conflicts with " + (slot.empty() ? "the onto branch " + swarm::printable(o.with)
                                                      : "slot " + swarm::printable(slot)) +
           " on " + paths + "\n";
  }
  return out;
}

}  // namespace cli
