// swarm renew: the heartbeat, and what the agent says it does in the same write.
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

namespace {

struct RenewRequest {
  std::string slot;
  std::string session;
  std::optional<std::string> status;  // given: said (even ''), else unchanged
  std::optional<std::string> note;
};

VerbResult renew(const RenewRequest& r, Context& ctx, Reporter& report) {
  swarm::Presence presence;
  if (r.status) presence.status = *r.status;
  if (r.note) presence.note = *r.note;
  auto lifecycle = ctx.lifecycle();
  std::vector<std::string> warnings;
  const auto revision = lifecycle.renew(r.slot, &warnings, session_of(r.session), presence);
  for (const auto& w : warnings) report.warn(w);
  VerbResult out;
  out.doc.set("slot", r.slot).set("revision", revision);
  out.text = "renewed slot " + r.slot + " (revision " + std::to_string(revision) + ")";
  return out;
}

}  // namespace

void resolve_slot(std::string& slot, const Context& ctx) { slot = ctx.slot_of(slot); }

VerbSpec renew_verb() {
  auto options =
      OptionTable<RenewRequest>()
          .text(&RenewRequest::slot, slot_option())
          .text(&RenewRequest::session, session_option())
          .maybe_text(&RenewRequest::status,
                      {.name = "--status",
                       .value_name = "STATUS",
                       .help = "Say what the agent does, in the same write: working, blocked, idle or waiting ('' "
                               "says nothing)",
                       .check = [](const std::string& t) { swarm::require_presence({.status = t}); }})
          .maybe_text(&RenewRequest::note,
                      {.name = "--note",
                       .value_name = "TEXT",
                       .help = "A line on what it does (at most 200 bytes; '' clears it)",
                       .check = [](const std::string& t) { swarm::require_presence({.note = t}); }})
          .done();
  return make_verb<RenewRequest>(
      {"renew"}, "Heartbeat: CAS-bump the slot's last_renewed (owning host only)",
      "Examples:\n"
      "  swarm renew --slot render\n"
      "  swarm renew --status blocked --note 'waiting for the API review'   # inside the slot's worktree\n"
      "status, serve and /metrics (swarm_agents{status}) show what it said.",
      std::move(options), {}, [](RenewRequest& r, const Context& ctx) { resolve_slot(r.slot, ctx); }, renew);
}

}  // namespace cli
