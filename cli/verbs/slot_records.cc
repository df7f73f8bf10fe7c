// swarm evict (the operator's override, any host) and swarm cwd (where the
// slot's worktree is, no NATS round trip): a slot's record and its folder
// as they are, one act each.
#include <filesystem>

#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/slots/lifecycle.h"

namespace cli {

namespace {

struct EvictRequest {
  std::string slot;
};

VerbResult evict(const EvictRequest& r, Context& ctx, Reporter&) {
  auto lifecycle = ctx.lifecycle();
  auto removed = lifecycle.evict(r.slot);
  VerbResult out;
  if (removed.corrupt())
    out.text = "evicted slot " + r.slot + ": its record was corrupt (" + swarm::printable(removed.corrupt_reason) +
               ") and is gone (revision " + std::to_string(removed.revision) + ")";
  else
    out.text = "evicted slot " + r.slot + ": the session of host " + swarm::printable(removed.session->host) +
               " (task " + swarm::printable(removed.session->task_id) + ", session " +
               std::to_string(removed.token()) + ", started " +
               (removed.session->started_at ? swarm::format_rfc3339(*removed.session->started_at) : "?") +
               ") is gone and its task lease released; its worktree on " + swarm::printable(removed.session->host) +
               " is left as it is (`swarm doctor --fix` there salvages it). `--json` shows the record removed.";
  const std::string stored = removed.corrupt() ? removed.raw : swarm::to_json(*removed.session);
  out.doc.set("slot", r.slot).set("revision", removed.revision).set("corrupt", removed.corrupt());
  swarm::Json record = removed.corrupt() ? swarm::Json() : swarm::Json::parse(stored);
  if (record) out.doc.set("record", std::move(record));
  else out.doc.set("raw", stored);
  return out;
}

struct CwdRequest {
  std::string slot;
};

VerbResult cwd(const CwdRequest& r, Context& ctx, Reporter&) {
  const auto path = ctx.workspace().worktree(r.slot);
  if (!std::filesystem::exists(path))
    throw swarm::Error(swarm::Errc::not_found, "slot " + r.slot + " has no worktree on this host (" + path.string() + ")");
  VerbResult out;
  out.text = std::filesystem::weakly_canonical(path).string();
  out.doc.set("slot", r.slot).set("worktree", out.text);
  return out;
}

}  // namespace

VerbSpec evict_verb() {
  auto options = OptionTable<EvictRequest>()
                     .text(&EvictRequest::slot, {.name = "--slot",
                                                 .value_name = "SLOT",
                                                 .help = "Slot name",
                                                 .required = true,
                                                 .check = swarm::require_slot_name})
                     .done();
  return make_verb<EvictRequest>(
      {"evict"}, "Operator override: CAS-delete the slot's record, whatever its host",
      "Example:\n  swarm evict --slot render     # prints the record it removed\n"
      "The worktree (on its own host) is left alone; `swarm doctor --fix` there salvages it.",
      std::move(options), {}, {}, evict);
}

VerbSpec cwd_verb() {
  auto options = OptionTable<CwdRequest>().text(&CwdRequest::slot, slot_option()).done();
  return make_verb<CwdRequest>(
      {"cwd"}, "Print the slot's worktree path (no NATS round trip)", "Example:\n  cd \"$(swarm cwd --slot render)\"",
      std::move(options), {}, [](CwdRequest& r, const Context& ctx) { resolve_slot(r.slot, ctx); }, cwd);
}

}  // namespace cli
