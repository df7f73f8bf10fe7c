// swarm hold PATTERN... | hold --release (PATTERN... | --all): a slot says
// which paths it edits; swarm holds: every live hold.
#include <algorithm>

#include "cli/command/context.h"
#include "cli/documents/documents.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/holds/hold_store.h"
#include "swarm/holds/patterns.h"

namespace cli {

namespace {

// The longest reason a hold takes, in bytes of UTF-8 (as a renewal's note).
constexpr std::size_t kMaxReasonBytes = 200;

struct HoldFlags {
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
void require_hold_flags(const HoldFlags& f) {
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

int take(Context& ctx, const HoldFlags& f) {
  auto lifecycle = ctx.lifecycle();
  const auto kind = f.shared ? swarm::HoldKind::shared : swarm::HoldKind::exclusive;
  const swarm::HoldResult r = lifecycle.hold(f.slot, f.patterns, kind, f.reason, session_of(f.session));
  for (const auto& w : r.warnings) ctx.out().warn(w);
  swarm::Json doc = swarm::Json::object();
  doc.set("slot", f.slot)
      .set("name", r.lease.name)
      .set("token", r.lease.token)
      .set("session", r.session)
      .set("patterns", swarm::Json::strings(f.patterns))
      .set("kind", swarm::to_string(kind))
      .set("reason", f.reason)
      .set("ttl_seconds", seconds(r.lease.record.ttl));
  ctx.out().result("hold",
                   "slot " + f.slot + " holds " + swarm::patterns_text(f.patterns) + " " +
                       (f.shared ? "shared" : "exclusively") + " (" + r.lease.name + ", token " +
                       std::to_string(r.lease.token) + "); renewed with the session, released by close or "
                       "`swarm hold --release`",
                   std::move(doc));
  return 0;
}

int let_go(Context& ctx, const HoldFlags& f) {
  auto lifecycle = ctx.lifecycle();
  const swarm::HoldRelease r = lifecycle.release_holds(f.slot, f.all ? std::vector<std::string>{} : f.patterns,
                                                       session_of(f.session));
  for (const auto& w : r.warnings) ctx.out().warn(w);
  swarm::Json doc = swarm::Json::object();
  doc.set("slot", f.slot).set("released", swarm::Json::strings(r.released)).set("narrowed", swarm::Json::strings(r.narrowed));
  std::string text;
  if (!r.released.empty()) text += "released " + swarm::patterns_text(r.released);
  if (!r.narrowed.empty()) text += std::string(text.empty() ? "" : "; ") + "narrowed " + swarm::patterns_text(r.narrowed);
  if (text.empty()) text = "slot " + f.slot + " held nothing";
  ctx.out().result("hold", text, std::move(doc));
  return 0;
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

}  // namespace

Verb add_hold(CLI::App& app) {
  auto f = std::make_shared<HoldFlags>();
  CLI::App* cmd = app.add_subcommand("hold", "Say which paths the slot edits: a fenced hold, renewed with the session");
  add_slot_option(*cmd, f->slot);
  add_session_option(*cmd, f->session);
  cmd->add_option("pattern", f->patterns, "Paths the slot edits, as git pathspec globs from the repository's root")
      ->option_text("PATTERN...")
      ->check(validator_of([](const std::string& p) { swarm::require_hold_pattern(p); }, "PATTERN"));
  cmd->add_flag("--shared", f->shared, "A shared hold: it conflicts only with exclusive ones (others may share it)");
  cmd->add_option("--reason", f->reason, "Why, in a line others see (at most 200 bytes)")
      ->option_text("TEXT")
      ->check(validator_of(
          [](const std::string& t) {
            if (t.size() > kMaxReasonBytes || !swarm::is_plain_text(t))
              throw swarm::Error(swarm::Errc::bad_input, "bad --reason '" + swarm::printable(t.substr(0, 60)) +
                                                             "': at most 200 bytes of UTF-8, one line, no control "
                                                             "character");
          },
          "TEXT"));
  cmd->add_flag("--release", f->release, "Let go of the holds on PATTERN... (or of all of them with --all)");
  cmd->add_flag("--all", f->all, "With --release: every hold of the slot");
  cmd->add_flag("--force", f->force,
                "Hold a pattern of the whole tree (`**`, `*`): refused without it, since it stands in every other "
                "slot's way");
  cmd->footer(
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
      "refuses a branch that changes them unless --force.");
  return {cmd, [f](Context& ctx) {
            require_hold_flags(*f);
            f->slot = ctx.slot_of(f->slot);
            return f->release ? let_go(ctx, *f) : take(ctx, *f);
          }};
}

Verb add_holds(CLI::App& app) {
  auto slot = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("holds", "Every live hold: slot, host, kind, token, age, patterns, reason");
  cmd->add_option("--slot", *slot, "Only this slot's holds")->option_text("SLOT")->check(slot_name_validator());
  cmd->footer(
      "Examples:\n"
      "  swarm holds\n"
      "  swarm holds --slot render --json\n"
      "Lists the holds someone may still hold (not past their TTL), by name; --json gives\n"
      "swarm.holds.v1 {\"schema\",\"holds\":[{\"name\",\"slot\",\"host\",\"patterns\",\"kind\",\"token\",...}]}.");
  return {cmd, [slot](Context& ctx) {
            const auto leases = ctx.leases();
            swarm::HoldStore store(leases, ctx.me(), swarm::kDefaultLeaseTtl);
            std::vector<swarm::LeaseEntry> holds = store.live();
            if (!slot->empty())
              holds.erase(std::remove_if(holds.begin(), holds.end(),
                                         [&](const swarm::LeaseEntry& e) { return swarm::hold_slot_of(e.name) != *slot; }),
                          holds.end());
            const auto now = holds.empty() ? swarm::TimePoint{} : store.store().server_clock().now();
            swarm::Json doc = swarm::Json::object();
            doc.set("holds", hold_rows(holds, now));
            ctx.out().result("holds", holds_table(holds, now), std::move(doc));
            return 0;
          }};
}

}  // namespace cli
