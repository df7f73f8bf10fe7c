// swarm branches: the slot branches of the hub, with their results and
// whether they landed. swarm land: a slot's branch into the onto branch,
// one lander at a time (lease land.<onto>), fenced (adr/0021).
#include <unistd.h>

#include <cstdio>

#include "cli/documents.h"
#include "cli/exit_code.h"
#include "cli/hold.h"
#include "swarm/duration.h"
#include "swarm/error.h"
#include "swarm/landing.h"
#include "swarm/lease/mutex.h"
#include "swarm/names.h"
#include "swarm/text.h"

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
      swarm::Json paths = swarm::Json::array();
      for (const auto& p : r.paths) cJSON_AddItemToArray(paths.get(), cJSON_CreateString(p.c_str()));
      doc.set("paths", std::move(paths));
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
};

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
  cmd->add_option("check", f->check, "A check to run on the merged tree, after --")->option_text("-- CHECK...");
  cmd->footer(
      "Examples:\n"
      "  swarm land --slot render\n"
      "  swarm land --ready -- make test\n"
      "A fast-forward when possible, else a merge commit (trailers Swarm-Slot, Swarm-Task,\n"
      "Swarm-Fencing-Token). CHECK runs (no shell) in a checkout of the merged tree kept in .swarm/land/,\n"
      "with SWARM_LAND_SLOT, SWARM_LAND_ONTO and SWARM_FENCING_TOKEN set; its output goes to stderr.\n"
      "The onto branch moves only by a compare-and-swap from the tip the merge was made on, while the\n"
      "lease is held; if it moved meanwhile, the merge is made again. A conflict or a failed check\n"
      "refuses the land (exit 3) and moves nothing; the slot's branch is never changed.");
  return {cmd, [f](Context& ctx) {
            if (f->slot.empty() && !f->ready)
              throw swarm::Error(swarm::Errc::bad_input, "name the slot to land with --slot SLOT, or land every "
                                                         "finished one with --ready");
            // Before waiting or writing: a program found on PATH or by an absolute
            // path. A relative path (./ci/test.sh) is the merged tree's own: it
            // runs in the checkout, so it can only be looked for there.
            const bool in_tree = !f->check.empty() && f->check.front().find('/') != std::string::npos &&
                                 f->check.front().front() != '/';
            if (!f->check.empty() && !in_tree) swarm::require_runnable(f->check.front());
            auto ttl = lease_ttl_option(f->ttl);
            std::optional<std::chrono::milliseconds> wait;
            if (!f->wait.empty()) wait = swarm::parse_duration(f->wait);
            SignalRouter signals;  // before any thread is made
            auto landing = ctx.landing(true);
            const std::string onto = landing.onto(f->onto);
            std::vector<std::string> slots;
            if (f->ready) {
              for (const auto& row : landing.ready(onto)) slots.push_back(row.git.slot);
            } else {
              slots.push_back(f->slot);
            }
            const std::string lease_name = swarm::land_lease_name(onto);
            auto store = ctx.leases(true);
            swarm::Json results = swarm::Json::array();
            std::string text;
            bool refused = false;
            const swarm::ExpectedSession session = session_of(f->session);
            if (!f->ready) landing.require_session(f->slot, session);
            for (const auto& s : slots) {
              swarm::Mutex mutex(store, lease_name,
                                 swarm::LeaseHolder::process(ctx.me(), getpid(), "land " + s), ttl);
              std::optional<swarm::Lease> lease;
              swarm::LandCheck check;
              check.command = f->check;
              check.running = [&signals](swarm::ChildProcess* child) { signals.forward_to(child); };
              check.interrupted = [&signals] { return signals.received() != 0; };
              std::optional<swarm::LandResult> r;
              try {
                lease = wait_in_line(ctx, store, mutex, lease_name, wait, signals);
                if (!lease) return exit_for_signal(signals.received());
                r = landing.land(s, onto, *lease, check);
              } catch (const std::exception& thrown) {
                try {
                  if (lease) store.release(*lease);
                } catch (const swarm::Error&) {
                  // It expires by itself.
                }
                if (dynamic_cast<const swarm::Cancelled*>(&thrown) != nullptr) {
                  ctx.out().note(thrown.what());
                  return exit_for_signal(signals.received());
                }
                if (!f->ready) throw;
                // One slot's failure is reported with the rest; the others still land.
                const swarm::Error e = swarm::Error::from(thrown);
                ctx.out().warn("slot " + s + " was not landed: " + e.what());
                swarm::Json failed = swarm::Json::object();
                failed.set("slot", s).set("onto", onto).set("outcome", "failed")
                    .set("error", swarm::to_string(e.kind())).set("message", swarm::printable(e.what()));
                results.push(std::move(failed));
                text += "failed " + s + ": " + e.what() + "\n";
                refused = true;
                if (signals.received() != 0) break;
                continue;
              }
              try {
                store.release(*lease);
              } catch (const swarm::Error& e) {
                ctx.out().warn(std::string("releasing lease ") + lease_name + " failed (it expires by itself): " +
                               e.what());
              }
              if (!f->ready) {
                // Refused: an error (exit 3), its message naming the paths or the check's status.
                if (r->outcome == swarm::LandResult::Outcome::refused)
                  throw swarm::Error(swarm::Errc::conflict, "slot " + s + " was not landed: " + r->message);
                ctx.out().result("land", land_text(*r), land_json(*r));
                return 0;
              }
              if (r->outcome == swarm::LandResult::Outcome::refused) {
                refused = true;
                ctx.out().warn(land_text(*r));
              }
              results.push(land_json(*r));
              text += land_text(*r) + "\n";
              if (signals.received() != 0) break;
            }
            if (text.empty()) text = "nothing to land on " + swarm::printable(onto) + "\n";
            text.pop_back();
            swarm::Json doc = swarm::Json::object();
            doc.set("onto", onto).set("lands", std::move(results));
            ctx.out().result("land", text, std::move(doc));
            if (signals.received() != 0) return exit_for_signal(signals.received());
            return refused ? kConflict : 0;
          }};
}

}  // namespace cli
