// swarm branches: the slot branches of the hub, with their results and
// whether they landed. swarm land: a slot's branch into the onto branch,
// one lander at a time (lease land.<onto>), fenced (adr/0021).
#include <unistd.h>

#include <cstdio>

#include "cli/documents.h"
#include "cli/exit_code.h"
#include "cli/hold.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/mutex.h"

namespace cli {

namespace {

CLI::Validator onto_validator() {
  return validator_of([](const std::string& b) { swarm::require_branch_name(b, "--onto"); }, "BRANCH");
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.resize(width, ' ');
  return text;
}

swarm::Json branch_json(const swarm::BranchRow& row) {
  swarm::Json b = swarm::Json::object();
  b.set("slot", row.git.slot);
  if (row.state) b.set("state", swarm::to_string(*row.state));
  else b.set_null("state");
  if (row.result.empty()) b.set_null("result");
  else b.set("result", row.result);
  b.set("ahead", static_cast<std::int64_t>(row.git.ahead))
      .set("landed", row.git.landed)
      .set("head", row.git.head)
      .set("committed_at", swarm::format_rfc3339(swarm::TimePoint(std::chrono::seconds(row.git.committed_at))));
  return b;
}

swarm::Json land_json(const swarm::LandResult& r) {
  swarm::Json doc = swarm::Json::object();
  doc.set("slot", r.slot)
      .set("onto", r.onto)
      .set("outcome", swarm::to_string(r.outcome))
      .set("how", r.kind)
      .set("from", r.from)
      .set("to", r.to)
      .set("fencing_token", static_cast<std::int64_t>(r.token))
      .set("attempts", r.attempts);
  if (r.outcome == swarm::LandResult::Outcome::refused) {
    doc.set("reason", r.reason);
    if (r.reason == "conflict") {
      doc.set("paths", swarm::Json::strings(r.paths));
    } else {
      doc.set("status", r.check_status);
    }
  }
  return doc;
}

std::string land_text(const swarm::LandResult& r) {
  switch (r.outcome) {
    case swarm::LandResult::Outcome::landed:
      return "landed " + r.slot + " on " + swarm::printable(r.onto) + " (" + r.kind + "): " + short_id(r.from) +
             " -> " + short_id(r.to);
    case swarm::LandResult::Outcome::already_landed:
      return "slot " + r.slot + " is landed on " + swarm::printable(r.onto) + " already (" + short_id(r.from) + ")";
    case swarm::LandResult::Outcome::refused: return "refused " + r.slot + ": " + r.message;
  }
  return "";
}

swarm::Json branches_of(const swarm::Branches& report) {
  swarm::Json doc = swarm::Json::object();
  doc.set("onto", report.onto);
  swarm::Json rows = swarm::Json::array();
  for (const auto& row : report.rows) rows.push(branch_json(row));
  doc.set("branches", std::move(rows));
  return doc;
}

struct LandFlags {
  std::string slot;
  bool ready = false;
  std::string onto;
  std::string wait;
  std::string ttl = "30s";
  std::vector<std::string> check;
  std::string session;
  bool force = false;
};

// Each line a check prints, on stderr with its slot before it, so that the
// checks of `land --ready` can be told apart.
void relay_check_line(const std::string& slot, std::string_view line) {
  std::string out = "[" + slot + "] ";
  out.append(line);
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stderr);  // every byte, a NUL too
  std::fflush(stderr);
}


// One slot landed under the lease of its onto branch: the lease waited for,
// the land made, the lease released. What `land` does per slot.
class SlotLander {
 public:
  SlotLander(Context& ctx, const LandFlags& f, swarm::Landing& landing, const swarm::LeaseStore& store,
             const std::string& onto, SignalRouter& signals)
      : ctx_(ctx), f_(f), landing_(landing), store_(store), onto_(onto), signals_(signals) {}

  // The land's result; nullopt when a signal ended the wait (nothing done).
  // Throws what the land threw (the lease released first).
  std::optional<swarm::LandResult> land(const std::string& slot, bool forced) {
    const std::string lease_name = swarm::land_lease_name(onto_);
    swarm::Mutex mutex(store_, lease_name, swarm::LeaseHolder::process(ctx_.me(), getpid(), "land " + slot),
                       lease_ttl_option(f_.ttl));
    swarm::LandCheck check;
    check.command = f_.check;
    check.running = [this](swarm::ChildProcess* child) { signals_.forward_to(child); };
    check.interrupted = [this] { return signals_.received() != 0; };
    check.output = [slot](std::string_view line) { relay_check_line(slot, line); };
    std::optional<swarm::Lease> lease;
    std::optional<swarm::LandResult> r;
    try {
      lease = wait_in_line(ctx_, store_, mutex, lease_name, wait(), signals_);
      if (!lease) return std::nullopt;
      // Judged again under the lease: the wait may have been long.
      if (!forced)
        if (const std::string why = landing_.not_ready(slot); !why.empty())
          throw swarm::Error(swarm::Errc::conflict, "slot " + slot + " is no longer ready to land: " + why +
                                                        "; nothing was landed");
      r = landing_.land(slot, onto_, *lease, check, forced);
    } catch (...) {
      release(lease, true);
      throw;
    }
    release(lease, false);
    return r;
  }

 private:
  std::optional<std::chrono::milliseconds> wait() const {
    if (f_.wait.empty()) return std::nullopt;
    return swarm::parse_duration(f_.wait);
  }
  void release(const std::optional<swarm::Lease>& lease, bool quietly) {
    if (!lease) return;
    try {
      store_.release(*lease);
    } catch (const swarm::Error& e) {
      if (!quietly)
        ctx_.out().warn("releasing lease " + lease->name + " failed (it expires by itself): " + e.what());
    }
  }

  Context& ctx_;
  const LandFlags& f_;
  swarm::Landing& landing_;
  const swarm::LeaseStore& store_;
  const std::string& onto_;
  SignalRouter& signals_;
};

// Before waiting or writing: a program found on PATH or by an absolute path.
// A relative path (./ci/test.sh) is the merged tree's own: it runs in the
// checkout, so it can only be looked for there.
void require_check_runnable(const std::vector<std::string>& check) {
  if (check.empty()) return;
  const bool in_tree = check.front().find('/') != std::string::npos && check.front().front() != '/';
  if (!in_tree) swarm::require_runnable(check.front());
}

// land --slot S: one land, its refusal an error (exit 3). A slot that is not
// ready (its last close not success, its session live) is refused before
// the lease is waited for, unless --force.
int land_one(Context& ctx, const LandFlags& f, swarm::Landing& landing, SlotLander& lander, SignalRouter& signals) {
  landing.require_session(f.slot, session_of(f.session));
  const std::string why = landing.not_ready(f.slot);
  if (!why.empty() && !f.force)
    throw swarm::Error(swarm::Errc::conflict, "slot " + f.slot + " is not ready to land: " + why +
                                                  "; nothing was landed (land it anyway with --force)");
  std::optional<swarm::LandResult> r;
  try {
    r = lander.land(f.slot, !why.empty());
  } catch (const swarm::Cancelled& stopped) {
    ctx.out().note(stopped.what());
    return exit_for_signal(signals.received());
  }
  if (!r) return exit_for_signal(signals.received());
  if (r->outcome == swarm::LandResult::Outcome::refused)
    throw swarm::Error(swarm::Errc::conflict, "slot " + f.slot + " was not landed: " + r->message);
  ctx.out().result("land", land_text(*r), land_json(*r));
  return 0;
}

// land --ready: every ready slot in close order, each reported as it lands
// (a line on stdout; with --json, the document at the end and a refusal on
// stderr as it happens). One slot's failure does not stop the others.
int land_ready(Context& ctx, swarm::Landing& landing, SlotLander& lander, const std::string& onto,
               SignalRouter& signals) {
  swarm::Json results = swarm::Json::array();
  bool refused = false, any = false;
  auto said = [&](const std::string& line, bool bad) {
    any = true;
    if (!ctx.out().json()) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    } else if (bad) {
      ctx.out().warn(line);
    }
  };
  for (const auto& row : landing.ready(onto)) {
    const std::string& s = row.git.slot;
    std::optional<swarm::LandResult> r;
    try {
      r = lander.land(s, false);
    } catch (const swarm::Cancelled& stopped) {
      ctx.out().note(stopped.what());
      break;
    } catch (const std::exception& thrown) {
      const swarm::Error e = swarm::Error::from(thrown);
      swarm::Json failed = swarm::Json::object();
      failed.set("slot", s).set("onto", onto).set("outcome", "failed").set("error", swarm::to_string(e.kind()))
          .set("message", swarm::printable(e.what()));
      results.push(std::move(failed));
      said("failed " + s + ": " + swarm::printable(e.what()), true);
      refused = true;
      if (signals.received() != 0) break;
      continue;
    }
    if (!r) break;  // a signal ended the wait
    const bool bad = r->outcome == swarm::LandResult::Outcome::refused;
    refused = refused || bad;
    results.push(land_json(*r));
    said(land_text(*r), bad);
    if (signals.received() != 0) break;
  }
  if (ctx.out().json()) {
    swarm::Json doc = swarm::Json::object();
    doc.set("onto", onto).set("lands", std::move(results));
    ctx.out().result("land", "", std::move(doc));
  } else if (!any) {
    ctx.out().result("land", "nothing to land on " + swarm::printable(onto), swarm::Json::object());
  }
  if (signals.received() != 0) return exit_for_signal(signals.received());
  return refused ? kConflict : 0;
}

int run_land(Context& ctx, const LandFlags& f) {
  if (f.slot.empty() && !f.ready)
    throw swarm::Error(swarm::Errc::bad_input, "name the slot to land with --slot SLOT, or land every finished one "
                                               "with --ready");
  require_check_runnable(f.check);
  lease_ttl_option(f.ttl);
  if (!f.wait.empty()) swarm::parse_duration(f.wait);
  SignalRouter signals;  // before any thread is made
  auto landing = ctx.landing(true);
  const std::string onto = landing.onto(f.onto);
  auto store = ctx.leases(true);
  SlotLander lander(ctx, f, landing, store, onto, signals);
  if (!f.ready) return land_one(ctx, f, landing, lander, signals);
  return land_ready(ctx, landing, lander, onto, signals);
}
}  // namespace

swarm::Json branches_document(const swarm::Branches& report) { return with_schema("branches", branches_of(report)); }

Verb add_branches(CLI::App& app) {
  auto onto = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "branches", "Every slot branch of the hub: live state, last result, commits ahead, landed or not");
  cmd->add_option("--onto", *onto, "The branch work lands on (default: the hub's default branch)")
      ->option_text("BRANCH")
      ->check(onto_validator());
  cmd->footer(
      "Columns: SLOT STATE RESULT AHEAD LANDED HEAD COMMITTED. STATE is the live session's (- when none);\n"
      "RESULT the last close's (from the journal); AHEAD the commits the onto branch lacks; LANDED whether\n"
      "the branch's tip is in the onto branch. With --json: swarm.branches.v1.");
  return {cmd, [onto](Context& ctx) {
            auto landing = ctx.landing();
            const std::string branch = landing.onto(*onto);
            auto report = landing.branches(branch);
            std::string text = padded("SLOT", 20) + " " + padded("STATE", 7) + " " + padded("RESULT", 8) + " " +
                               padded("AHEAD", 6) + " " + padded("LANDED", 7) + " " + padded("HEAD", 12) +
                               " COMMITTED\n";
            for (const auto& row : report.rows) {
              text += padded(swarm::printable(row.git.slot), 20) + " " +
                      padded(row.state ? std::string(swarm::to_string(*row.state)) : "-", 7) + " " +
                      padded(row.result.empty() ? "-" : swarm::printable(row.result), 8) + " " +
                      padded(std::to_string(row.git.ahead), 6) + " " + padded(row.git.landed ? "yes" : "no", 7) + " " +
                      padded(short_id(row.git.head), 12) + " " +
                      swarm::format_rfc3339(swarm::TimePoint(std::chrono::seconds(row.git.committed_at))) + "\n";
            }
            swarm::Json doc = branches_of(report);
            if (report.rows.empty()) text = "no slot branches on the hub\n";
            text.pop_back();
            ctx.out().result("branches", text, std::move(doc));
            return 0;
          }};
}

Verb add_land(CLI::App& app) {
  auto f = std::make_shared<LandFlags>();
  CLI::App* cmd = app.add_subcommand(
      "land", "Bring a slot's branch into the onto branch, one lander at a time, optionally after a check");
  auto* slot = cmd->add_option("--slot", f->slot, "The slot whose branch lands")
                   ->option_text("SLOT")
                   ->check(slot_name_validator());
  cmd->add_flag("--ready", f->ready,
                "Land every slot whose last close was success and whose branch is not landed, in the order "
                "they were closed")
      ->excludes(slot);
  cmd->add_option("--onto", f->onto, "The branch to land on (default: the hub's default branch)")
      ->option_text("BRANCH")
      ->check(onto_validator());
  cmd->add_option("--wait", f->wait, "Wait in line at most this long (default: for ever; 0: try once, exit 3 if "
                                     "another land runs)")
      ->option_text("DUR")
      ->check(duration_validator());
  cmd->add_option("--ttl", f->ttl, "TTL of lease land.<onto>, 1s to 1h: renewed every TTL/3 while it works")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  add_session_option(*cmd, f->session);
  cmd->add_flag("--force", f->force,
                "Land --slot S even though its last close was not success or its session is live (journaled as "
                "forced)")
      ->excludes("--ready");
  cmd->add_option("check", f->check, "A check to run on the merged tree, after --")->option_text("-- CHECK...");
  cmd->footer(
      "Examples:\n"
      "  swarm land --slot render\n"
      "  swarm land --ready -- make test\n"
      "A fast-forward when possible, else a merge commit (trailers Swarm-Slot, Swarm-Task,\n"
      "Swarm-Fencing-Token). CHECK runs (no shell) in a checkout of the merged tree kept in .swarm/land/,\n"
      "with SWARM_LAND_SLOT, SWARM_LAND_ONTO and SWARM_FENCING_TOKEN set; its output goes to stderr, each\n"
      "line after [SLOT]. --slot S refuses (exit 3) a slot whose last close was not success or whose\n"
      "session is live, unless --force. --ready reports each slot as it lands.\n"
      "The onto branch moves only by a compare-and-swap from the tip the merge was made on, while the\n"
      "lease is held; if it moved meanwhile, the merge is made again. A conflict or a failed check\n"
      "refuses the land (exit 3) and moves nothing; the slot's branch is never changed.");
  return {cmd, [f](Context& ctx) { return run_land(ctx, *f); }};
}

}  // namespace cli
