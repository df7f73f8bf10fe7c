// swarm land: a slot's branch into the onto branch, one lander at a time
// (lease land.<onto>), fenced (adr/0021).
#include <unistd.h>

#include <cstdio>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/exit_code.h"
#include "cli/command/lease_wait.h"
#include "cli/command/land.h"
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

struct LandFlags {
  std::string slot;
  std::string task;  // --task ID: the branch that holds its closed head
  bool ready = false;
  std::string onto;
  std::string wait;
  std::string ttl = "30s";
  std::vector<std::string> check;
  bool no_check = false;  // the workspace's check skipped (journaled forced)
  std::string session;
  bool force = false;
  int retries = 0;
  int batch = 0;  // 0: one at a time
};

// Each line a check prints, on stderr with its slot before it, so that the
// checks of `land --ready` can be told apart.
void relay_check_line(std::string_view who, std::string_view line) {
  std::string out = "[" + std::string(who) + "] ";
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
             const std::string& onto, SignalRouter& signals, std::vector<std::vector<std::string>> commands,
             bool check_forced)
      : ctx_(ctx), f_(f), landing_(landing), store_(store), onto_(onto), signals_(signals),
        commands_(std::move(commands)), check_forced_(check_forced) {}

  // The land's result; nullopt when a signal ended the wait (nothing done).
  // Throws what the land threw (the lease released first).
  std::optional<swarm::LandResult> land(const std::string& slot, bool forced) {
    const std::string lease_name = swarm::land_lease_name(onto_);
    swarm::Mutex mutex(store_, lease_name, swarm::LeaseHolder::process(ctx_.me(), getpid(), "land " + slot),
                       lease_ttl_option(f_.ttl));
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
      r = landing_.land(slot, onto_, *lease, check(), forced);
    } catch (...) {
      release(lease, true);
      throw;
    }
    release(lease, false);
    return r;
  }

  // A batch of ready slots landed under the lease (see Landing::land_batch).
  // Each slot judged again once the lease is held: one no longer ready is
  // in `stale` (with why) and left out. nullopt: a signal ended the wait.
  std::optional<std::vector<swarm::LandResult>> land_batch(const std::vector<std::string>& slots,
                                                           std::vector<std::pair<std::string, std::string>>& stale) {
    const std::string lease_name = swarm::land_lease_name(onto_);
    std::string what;
    for (const auto& s : slots) what += (what.empty() ? "" : " ") + s;
    swarm::Mutex mutex(store_, lease_name, swarm::LeaseHolder::process(ctx_.me(), getpid(), "land batch " + what),
                       lease_ttl_option(f_.ttl));
    std::optional<swarm::Lease> lease;
    std::vector<swarm::LandResult> r;
    try {
      lease = wait_in_line(ctx_, store_, mutex, lease_name, wait(), signals_);
      if (!lease) return std::nullopt;
      std::vector<std::string> ready;
      for (const auto& slot : slots) {
        if (const std::string why = landing_.not_ready(slot); !why.empty()) stale.emplace_back(slot, why);
        else ready.push_back(slot);
      }
      r = landing_.land_batch(ready, onto_, *lease, check());
    } catch (...) {
      release(lease, true);
      throw;
    }
    release(lease, false);
    return r;
  }

 private:
  swarm::LandCheck check() const {
    swarm::LandCheck check;
    check.commands = commands_;
    check.forced = check_forced_;
    check.retries = f_.retries;
    check.running = [this](swarm::ChildProcess* child) { signals_.forward_to(child); };
    check.interrupted = [this] { return signals_.received() != 0; };
    check.output = [](std::string_view who, std::string_view line) { relay_check_line(who, line); };
    return check;
  }
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
  std::vector<std::vector<std::string>> commands_;  // the workspace's check, then the one given
  bool check_forced_;
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
  if (!swarm::is_parked_lane(f.slot)) landing.require_session(f.slot, session_of(f.session));
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
  ctx.out().result("land", land_summary(*r), land_document(*r));
  return 0;
}

// What land --ready says as it goes: a line on stdout per slot (with
// --json, the document at the end and each refusal on stderr as it happens).
class ReadyReport {
 public:
  ReadyReport(Context& ctx, std::string onto) : ctx_(ctx), onto_(std::move(onto)) {}
  void landed(const swarm::LandResult& r) {
    const bool bad = r.outcome == swarm::LandResult::Outcome::refused;
    refused_ = refused_ || bad;
    results_.push(land_document(r));
    said(land_summary(r), bad);
  }
  void failed(const std::string& slot, const std::string& kind, const std::string& message) {
    swarm::Json failed = swarm::Json::object();
    failed.set("slot", slot).set("onto", onto_).set("outcome", "failed").set("error", kind)
        .set("message", swarm::printable(message));
    results_.push(std::move(failed));
    said("failed " + slot + ": " + swarm::printable(message), true);
    refused_ = true;
  }
  int finish(SignalRouter& signals) {
    if (ctx_.out().json()) {
      swarm::Json doc = swarm::Json::object();
      doc.set("onto", onto_).set("lands", std::move(results_));
      ctx_.out().result("land", "", std::move(doc));
    } else if (!any_) {
      ctx_.out().result("land", "nothing to land on " + swarm::printable(onto_), swarm::Json::object());
    }
    if (signals.received() != 0) return exit_for_signal(signals.received());
    return refused_ ? kConflict : 0;
  }

 private:
  void said(const std::string& line, bool bad) {
    any_ = true;
    if (!ctx_.out().json()) {
      std::fputs((line + "\n").c_str(), stdout);
      std::fflush(stdout);
    } else if (bad) {
      ctx_.out().warn(line);
    }
  }
  Context& ctx_;
  std::string onto_;
  swarm::Json results_ = swarm::Json::array();
  bool refused_ = false, any_ = false;
};

// Lands `slots` (one, or a batch with --batch): false when a signal ended it.
bool land_group(const LandFlags& f, SlotLander& lander, const std::vector<std::string>& slots, ReadyReport& report) {
  if (f.batch == 0) {
    auto r = lander.land(slots.front(), false);
    if (!r) return false;
    report.landed(*r);
    return true;
  }
  std::vector<std::pair<std::string, std::string>> stale;
  auto results = lander.land_batch(slots, stale);
  for (const auto& [slot, why] : stale)
    report.failed(slot, "conflict", "slot " + slot + " is no longer ready to land: " + why + "; it was left out");
  if (!results) return false;
  for (const auto& r : *results) report.landed(r);
  return true;
}

// land --ready: every ready slot (fast lane first, then in close order),
// one at a time or in batches of --batch, each reported as it lands. One
// slot's failure does not stop the others.
int land_ready(Context& ctx, const LandFlags& f, swarm::Landing& landing, SlotLander& lander,
               const std::string& onto, SignalRouter& signals) {
  ReadyReport report(ctx, onto);
  std::vector<swarm::BranchRow> unreviewed;
  const auto rows = landing.ready(onto, &unreviewed);
  for (const auto& row : unreviewed)
    ctx.out().note("slot " + row.git.slot + " waits for a review (" +
                   (row.task ? swarm::printable(row.task->id) + " " + row.task->state_text : std::string("no queued task")) +
                   (row.review.empty() ? "" : ", review " + row.review) + "): review is required here; see `swarm branches`");
  const std::size_t size = f.batch > 0 ? static_cast<std::size_t>(f.batch) : 1;
  std::vector<std::string> ready;
  for (const auto& row : rows) {
    if (!row.refused) {
      ready.push_back(row.git.slot);
      continue;
    }
    // Refused by a check at the head it still has: refused again, at once.
    swarm::LandResult refused;
    refused.slot = row.git.slot;
    refused.onto = onto;
    refused.head = row.git.head;
    refused.reason = row.refused->reason;
    refused.check_status = row.refused->status;
    refused.message = swarm::standing_refusal_text(*row.refused) + " (land it anyway with land --slot " +
                      row.git.slot + " --force)";
    report.landed(refused);
  }
  for (std::size_t at = 0; at < ready.size(); at += size) {
    std::vector<std::string> slots(ready.begin() + static_cast<std::ptrdiff_t>(at),
                                   ready.begin() + static_cast<std::ptrdiff_t>(std::min(ready.size(), at + size)));
    try {
      if (!land_group(f, lander, slots, report)) break;
    } catch (const swarm::Cancelled& stopped) {
      ctx.out().note(stopped.what());
      break;
    } catch (const std::exception& thrown) {
      const swarm::Error e = swarm::Error::from(thrown);
      for (const auto& slot : slots) report.failed(slot, std::string(swarm::to_string(e.kind())), e.what());
    }
    if (signals.received() != 0) break;
  }
  return report.finish(signals);
}

// The checks a land runs: the workspace's (`up --check`), unless skipped,
// then the one given; each runnable (exit 2 before any I/O otherwise).
struct Checks {
  std::vector<std::vector<std::string>> commands;
  bool forced = false;  // the workspace's check skipped (--no-check)
};
Checks checks_of(const Context& ctx, const LandFlags& f) {
  const std::vector<std::string> required = ctx.workspace().load_config().check_command();
  Checks checks;
  if (!required.empty() && !f.no_check) checks.commands.push_back(required);
  if (!f.check.empty() && f.check != required) checks.commands.push_back(f.check);
  checks.forced = f.no_check && !required.empty();
  for (const auto& command : checks.commands) require_check_runnable(command);
  return checks;
}

int run_land(Context& ctx, const LandFlags& given) {
  LandFlags f = given;
  if (f.slot.empty() && f.task.empty() && !f.ready)
    throw swarm::Error(swarm::Errc::bad_input, "name the slot to land with --slot SLOT (or a task with --task ID), "
                                               "or land every finished one with --ready");
  if (f.batch > 0 && !f.ready)
    throw swarm::Error(swarm::Errc::bad_input, "--batch " + std::to_string(f.batch) + " lands ready slots together: "
                                               "use it with --ready");
  Checks checks = checks_of(ctx, f);
  if (f.retries > 0 && checks.commands.empty())
    throw swarm::Error(swarm::Errc::bad_input, "--retries " + std::to_string(f.retries) + " runs a failed check "
                                               "again, and no check was given (after --) or is required here");
  lease_ttl_option(f.ttl);
  if (!f.wait.empty()) swarm::parse_duration(f.wait);
  SignalRouter signals;  // before any thread is made
  auto landing = ctx.landing(true);
  landing.land_past_holds(f.force);
  const std::string onto = landing.onto(f.onto);
  auto store = ctx.leases(true);
  if (!f.task.empty()) f.slot = landing.lane_of_task(onto, f.task);
  SlotLander lander(ctx, f, landing, store, onto, signals, std::move(checks.commands), checks.forced);
  if (!f.ready) return land_one(ctx, f, landing, lander, signals);
  return land_ready(ctx, f, landing, lander, onto, signals);
}
}  // namespace

void require_land_check(const Context& ctx, const std::vector<std::string>& check) {
  LandFlags f;
  f.check = check;
  checks_of(ctx, f);
}

std::optional<swarm::LandResult> land_slot(Context& ctx, const std::string& slot, const std::vector<std::string>& check,
                                           SignalRouter& signals) {
  LandFlags f;
  f.slot = slot;
  f.check = check;
  Checks checks = checks_of(ctx, f);
  auto landing = ctx.landing(true);
  const std::string onto = landing.onto(f.onto);
  auto store = ctx.leases(true);
  SlotLander lander(ctx, f, landing, store, onto, signals, std::move(checks.commands), checks.forced);
  if (const std::string why = landing.not_ready(slot); !why.empty())
    throw swarm::Error(swarm::Errc::conflict, "slot " + slot + " is not ready to land: " + why + "; nothing was landed");
  try {
    return lander.land(slot, false);
  } catch (const swarm::Cancelled& stopped) {
    ctx.out().note(stopped.what());
    return std::nullopt;
  }
}


Verb add_land(CLI::App& app) {
  auto f = std::make_shared<LandFlags>();
  CLI::App* cmd = app.add_subcommand(
      "land", "Bring a slot's branch into the onto branch, one lander at a time, optionally after a check");
  auto* slot = cmd->add_option("--slot", f->slot, "The slot whose branch lands")
                   ->option_text("SLOT")
                   ->check(slot_name_validator());
  auto* task = cmd->add_option("--task", f->task,
                               "The task whose closed head lands: its slot's branch, or the branch it was parked at "
                               "when its slot took up another task (swarm/<slot>.<task>)")
                   ->option_text("ID")
                   ->check(task_id_validator())
                   ->excludes(slot);
  cmd->add_flag("--ready", f->ready,
                "Land every slot whose last close was success and whose branch is not landed, and every task "
                "parked so: those closed with --priority high first, each lane in the order they were closed")
      ->excludes(slot)
      ->excludes(task);
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
  cmd->add_flag("--no-check", f->no_check,
                "Skip the check the workspace requires (`swarm up --check`); journaled as forced");
  cmd->add_flag("--force", f->force,
                "Land --slot S even though its last close was not success, its session is live, or it changes "
                "paths another live slot holds (journaled as forced)")
      ->excludes("--ready");
  cmd->add_option("--batch", f->batch,
                  "With --ready: merge up to N ready slots into one candidate and check it once; a failed check is "
                  "bisected, so only the culprits are refused")
      ->option_text("N")
      ->transform(decimal_in(1, 256));
  cmd->add_option("--retries", f->retries,
                  "Run a failed check again on the same tree up to K times; a pass on a retry lands and is "
                  "journaled as flaky")
      ->option_text("K")
      ->transform(decimal_in(0, 20));
  cmd->add_option("check", f->check, "A check to run on the merged tree, after --")->option_text("-- CHECK...");
  cmd->footer(
      "Examples:\n"
      "  swarm land --slot render\n"
      "  swarm land --ready -- make test\n"
      "  swarm land --ready --batch 8 --retries 1 -- make test\n"
      "A fast-forward when possible, else a merge commit (trailers Swarm-Slot, Swarm-Task,\n"
      "Swarm-Fencing-Token). CHECK runs (no shell) in a checkout of the merged tree kept in .swarm/land/,\n"
      "with SWARM_LAND_SLOT, SWARM_LAND_ONTO and SWARM_FENCING_TOKEN set and no NATS_* or other SWARM_*\n"
      "variable (no credential); its output goes to stderr, each line after [SLOT]. The check the workspace\n"
      "requires (`swarm up --check`) runs first on every land, unless --no-check. Without any check, a\n"
      "tree that cannot be checked out is refused. A slot a check refused stays refused until its branch\n"
      "moves past the refused head, or --force. --slot S refuses (exit 3) a slot whose last close was not\n"
      "success or whose session is live, unless --force. A branch that changes paths another live slot\n"
      "holds exclusively (`swarm hold`) is refused (reason hold) unless --force; journaled hold.conflict.\n"
      "--ready reports each slot as it lands: slots\n"
      "closed with --priority high first, then in the order they were closed.\n"
      "--batch N merges up to N ready slots in turn into one candidate and runs CHECK once on it (with\n"
      "SWARM_LAND_SLOT the slots, space-separated, and SWARM_LAND_BATCH the batch's id). When it fails the\n"
      "batch is bisected: the good slots land, each with its own merge commit, and only the culprits are\n"
      "refused; the onto branch moves once per batch. With one culprit among N: at most 1 + 2*log2(N)\n"
      "checks.\n"
      "The onto branch moves only by a compare-and-swap from the tip the merge was made on, while the\n"
      "lease is held; if it moved meanwhile, the merge is made again. A conflict or a failed check\n"
      "refuses the land (exit 3) and moves nothing; the slot's branch is never changed.");
  return {cmd, [f](Context& ctx) { return run_land(ctx, *f); }};
}

}  // namespace cli
