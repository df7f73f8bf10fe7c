// swarm hold PATTERN... | hold --release (PATTERN... | --all): a slot says
// which paths it edits; swarm holds: every live hold.
#include <algorithm>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/output.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/holds/hold_store.h"
#include "swarm/holds/patterns.h"

namespace cli {

namespace {

// The longest reason a hold takes, in bytes of UTF-8 (as a renewal's note).
constexpr std::size_t kMaxReasonBytes = 200;

struct HoldRequest {
  std::string slot;
  std::string session;
  std::vector<std::string> patterns;
  bool shared = false;
  std::string reason;
  bool release = false;
  bool all = false;
  bool force = false;  // a pattern of the whole tree
};

double seconds(std::chrono::milliseconds d) { return static_cast<double>(d.count()) / 1000.0; }

// Before any I/O: what the flags ask makes sense together (exit 2 otherwise).
void require_hold_flags(const HoldRequest& f) {
  if (f.release) {
    if (f.all && !f.patterns.empty())
      throw swarm::Error(swarm::Errc::bad_input, "--release --all lets go of every hold; name patterns or --all, not both");
    if (!f.all && f.patterns.empty())
      throw swarm::Error(swarm::Errc::bad_input, "--release of what? name the patterns, or --all");
    if (f.shared || !f.reason.empty())
      throw swarm::Error(swarm::Errc::bad_input, "--shared and --reason describe a new hold, not a release");
    return;
  }
  if (f.all) throw swarm::Error(swarm::Errc::bad_input, "--all goes with --release");
  if (f.patterns.empty())
    throw swarm::Error(swarm::Errc::bad_input, "no pattern to hold; name the paths, e.g. swarm hold 'src/api/**'");
  for (const auto& p : f.patterns)
    if (swarm::covers_whole_tree(p) && !f.force)
      throw swarm::Error(swarm::Errc::bad_input,
                         "hold '" + swarm::printable(p) + "' holds the whole tree: every other slot's hold, commit "
                         "and land would stand in its way while its session lives; name the paths it edits, or "
                         "take it anyway with --force");
}

VerbResult take(const HoldRequest& f, Context& ctx, Reporter& report) {
  auto lifecycle = ctx.lifecycle();
  const auto kind = f.shared ? swarm::HoldKind::shared : swarm::HoldKind::exclusive;
  const swarm::HoldResult r = lifecycle.hold(f.slot, f.patterns, kind, f.reason, session_of(f.session));
  for (const auto& w : r.warnings) report.warn(w);
  VerbResult out;
  out.doc.set("slot", f.slot)
      .set("name", r.lease.name)
      .set("token", r.lease.token)
      .set("session", r.session)
      .set("patterns", swarm::Json::strings(f.patterns))
      .set("kind", swarm::to_string(kind))
      .set("reason", f.reason)
      .set("ttl_seconds", seconds(r.lease.record.ttl));
  out.text = "slot " + f.slot + " holds " + swarm::patterns_text(f.patterns) + " " +
             (f.shared ? "shared" : "exclusively") + " (" + r.lease.name + ", token " + std::to_string(r.lease.token) +
             "); renewed with the session, released by close or `swarm hold --release`";
  return out;
}

VerbResult let_go(const HoldRequest& f, Context& ctx, Reporter& report) {
  auto lifecycle = ctx.lifecycle();
  const swarm::HoldRelease r = lifecycle.release_holds(f.slot, f.all ? std::vector<std::string>{} : f.patterns,
                                                       session_of(f.session));
  for (const auto& w : r.warnings) report.warn(w);
  VerbResult out;
  out.doc.set("slot", f.slot).set("released", swarm::Json::strings(r.released)).set("narrowed", swarm::Json::strings(r.narrowed));
  std::string text;
  if (!r.released.empty()) text += "released " + swarm::patterns_text(r.released);
  if (!r.narrowed.empty()) text += std::string(text.empty() ? "" : "; ") + "narrowed " + swarm::patterns_text(r.narrowed);
  if (text.empty()) text = "slot " + f.slot + " held nothing";
  out.text = text;
  return out;
}

std::string holds_table(const std::vector<swarm::LeaseEntry>& holds, swarm::TimePoint now) {
  if (holds.empty()) return "no holds\n";
  std::vector<std::vector<std::string>> rows = {{"SLOT", "HOST", "KIND", "TOKEN", "AGE", "PATTERNS", "REASON"}};
  for (const auto& e : holds) {
    const auto age = swarm::format_duration(
        std::chrono::duration_cast<std::chrono::seconds>(swarm::standing_of(e, now).age));
    if (e.corrupt()) {
      rows.push_back({swarm::printable(e.name), "-", "corrupt", "-", age,
                      "(" + swarm::printable(e.corrupt_reason) + ")", "-"});
      continue;
    }
    const swarm::LeaseRecord& r = *e.record;
    rows.push_back({swarm::printable(r.slot), swarm::printable(r.host), r.kind == "shared" ? "shared" : "exclusive",
                    std::to_string(e.token()), age, swarm::patterns_text(r.patterns),
                    r.reason.empty() ? "-" : swarm::printable(r.reason)});
  }
  return aligned(rows);
}

struct HoldsRequest {
  std::string slot;
};

VerbResult holds(const HoldsRequest& r, Context& ctx, Reporter&) {
  const auto leases = ctx.leases();
  swarm::HoldStore store(leases, ctx.me(), swarm::kDefaultLeaseTtl);
  std::vector<swarm::LeaseEntry> holds = store.live();
  if (!r.slot.empty())
    holds.erase(std::remove_if(holds.begin(), holds.end(),
                               [&](const swarm::LeaseEntry& e) { return swarm::hold_slot_of(e.name) != r.slot; }),
                holds.end());
  const auto now = holds.empty() ? swarm::TimePoint{} : store.store().server_clock().now();
  VerbResult out;
  out.doc.set("holds", hold_rows(holds, now));
  out.text = holds_table(holds, now);
  return out;
}

}  // namespace

VerbSpec hold_verb() {
  auto options =
      OptionTable<HoldRequest>()
          .text(&HoldRequest::slot, slot_option())
          .text(&HoldRequest::session, session_option())
          .texts(&HoldRequest::patterns,
                 {.name = "pattern", .value_name = "PATTERN...",
                  .help = "Paths the slot edits, as git pathspec globs from the repository's root",
                  .check = [](const std::string& p) { swarm::require_hold_pattern(p); }})
          .flag(&HoldRequest::shared, {.name = "--shared", .help = "A shared hold: it conflicts only with exclusive "
                                                                   "ones (others may share it)"})
          .text(&HoldRequest::reason,
                {.name = "--reason", .value_name = "TEXT", .help = "Why, in a line others see (at most 200 bytes)",
                 .check = [](const std::string& t) {
                   if (t.size() > kMaxReasonBytes || !swarm::is_plain_text(t))
                     throw swarm::Error(swarm::Errc::bad_input, "bad --reason '" + swarm::printable(t.substr(0, 60)) +
                                                                    "': at most 200 bytes of UTF-8, one line, no "
                                                                    "control character");
                 }})
          .flag(&HoldRequest::release, {.name = "--release", .help = "Let go of the holds on PATTERN... (or of all of "
                                                                     "them with --all)"})
          .flag(&HoldRequest::all, {.name = "--all", .help = "With --release: every hold of the slot"})
          .flag(&HoldRequest::force, {.name = "--force", .help = "Hold a pattern of the whole tree (`**`, `*`): "
                                                                 "refused without it, since it stands in every other "
                                                                 "slot's way"})
          .done();
  return make_verb<HoldRequest>(
      {"hold"}, "Say which paths the slot edits: a fenced hold, renewed with the session",
      "Examples:\n"
      "  swarm hold 'src/api/**' --reason 'reworking the API'\n"
      "  swarm hold docs/guide.md --shared\n"
      "  swarm hold --release 'src/api/**'\n"
      "  swarm hold --release --all\n"
      "Each hold is a lease hold.<slot>.<n> with its own fencing token. It lives with the slot's\n"
      "session: renewed by every renewal (renew, commit, sync, swarm run), released by close, evict,\n"
      "expiry or --release. An exclusive hold (the default) conflicts with any other slot's live hold\n"
      "whose patterns can match a common path; a shared one only with exclusive ones. A conflict is\n"
      "exit 3 naming the holder's slot, host and patterns, and takes nothing. Overlap is judged from\n"
      "the patterns' literal parts, erring towards \"overlap\" (`**/*.md` overlaps almost anything).\n"
      "commit warns about (or, with `swarm up --holds refuse`, refuses) paths others hold; land\n"
      "refuses a branch that changes them unless --force.",
      std::move(options), require_hold_flags, [](HoldRequest& r, const Context& ctx) { resolve_slot(r.slot, ctx); },
      [](const HoldRequest& r, Context& ctx, Reporter& report) {
        return r.release ? let_go(r, ctx, report) : take(r, ctx, report);
      });
}

VerbSpec holds_verb() {
  auto options = OptionTable<HoldsRequest>()
                     .text(&HoldsRequest::slot, {.name = "--slot", .value_name = "SLOT", .help = "Only this slot's holds",
                                                 .check = swarm::require_slot_name})
                     .done();
  return make_verb<HoldsRequest>(
      {"holds"}, "Every live hold: slot, host, kind, token, age, patterns, reason",
      "Examples:\n"
      "  swarm holds\n"
      "  swarm holds --slot render --json\n"
      "Lists the holds someone may still hold (not past their TTL), by name; --json gives\n"
      "swarm.holds.v1 {\"schema\",\"holds\":[{\"name\",\"slot\",\"host\",\"patterns\",\"kind\",\"token\",...}]}.",
      std::move(options), {}, {}, holds);
}

}  // namespace cli
