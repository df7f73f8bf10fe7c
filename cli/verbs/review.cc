// swarm review approve, reject and show: a slot's task approved at the
// head that was reviewed, rejected back to open with a reason, or shown as
// an approval would take it (its branch, head, diff and checks). With `up
// --require-review`, `land --ready` takes only tasks approved at their
// branch's tip.
#include <pwd.h>
#include <unistd.h>

#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

struct ReviewRequest {
  std::string slot, task, head, reason;
};

struct ReviewShowRequest {
  std::string task, onto;
};

// Who reviews: this user on this host.
std::string reviewer(const Context& ctx) {
  const passwd* pw = ::getpwuid(::geteuid());
  const std::string user = pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "uid " + std::to_string(::geteuid());
  return user + "@" + ctx.me().host;
}

void require_head(const std::string& head) {
  const bool hex = head.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || head.size() < 7 || head.size() > 64)
    throw swarm::Error(swarm::Errc::bad_input, "bad --head '" + swarm::printable(head.substr(0, 80)) +
                                                   "': a commit id, 7 to 64 lowercase hex digits");
}

void require_target(const ReviewRequest& r) {
  if (r.slot.empty() == r.task.empty())
    throw swarm::Error(swarm::Errc::bad_input, "name what to review: --slot SLOT or --task ID (one of them)");
}

void require_rejection(const ReviewRequest& r) {
  require_target(r);
  if (r.reason.empty()) throw swarm::Error(swarm::Errc::bad_input, "say why with --reason TEXT");
  if (r.reason.size() > swarm::kMaxTitleBytes * 5 || !swarm::is_valid_utf8(r.reason))
    throw swarm::Error(swarm::Errc::bad_input, "bad --reason: at most 1000 bytes of UTF-8 text");
}

VerbResult review(const ReviewRequest& r, Context& ctx, bool approving) {
  auto landing = ctx.landing();
  const auto done = landing.review(r.slot, r.task, approving, r.head, r.reason, reviewer(ctx));
  const swarm::Task& t = done.task;
  VerbResult out;
  out.doc = swarm::Json::parse(swarm::to_json(t));
  out.doc.set("revision", done.revision).set("tip", done.tip);
  // What was reviewed is the task's own head; the branch may be past it (the slot's next task).
  const std::string head = done.head.empty() ? "(no head)" : swarm::printable(done.head.substr(0, 12));
  const std::string moved =
      !done.head.empty() && done.head != done.tip ? "; its branch is at " + done.tip.substr(0, 12) + " now" : "";
  out.text = swarm::printable(t.id) + " " + t.state_text + " (slot " + swarm::printable(t.slot) +
             (approving ? ", approved at " : ", rejected at ") + head + moved + ")\n";
  return out;
}

std::string short_id(const std::string& id) { return id.empty() ? "-" : id.substr(0, 12); }

// A task id as a shell word: as it is when it needs no quotes (T-42).
std::string id_word(const std::string& id) {
  const bool plain = !id.empty() && id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                         "0123456789_.-/#:") == std::string::npos;
  return plain ? id : swarm::shell_word(id);
}

swarm::Json view_json(const swarm::Landing::ReviewView& v, const std::string& check) {
  swarm::Json doc = swarm::Json::object();
  doc.set("task", swarm::Json::parse(swarm::to_json(v.task)))
      .set("branch", v.branch)
      .set("head", v.tip)
      .set("onto", v.onto)
      .set("onto_head", v.onto_tip);
  if (v.diff.base.empty()) doc.set_null("base");
  else doc.set("base", v.diff.base);
  doc.set("approvable", v.not_approvable.empty());
  if (!v.not_approvable.empty()) doc.set("why_not", v.not_approvable);
  swarm::Json checks = swarm::Json::object();
  if (check.empty()) checks.set_null("required");
  else checks.set("required", check);
  if (!v.refused) {
    checks.set_null("refused");
  } else {
    swarm::Json refused = swarm::Json::object();
    refused.set("head", v.refused->head).set("reason", v.refused->reason).set("status", v.refused->status);
    checks.set("refused", std::move(refused));
  }
  doc.set("checks", std::move(checks));
  swarm::Json files = swarm::Json::array();
  for (const auto& f : v.diff.files) {
    swarm::Json file = swarm::Json::object();
    file.set("path", swarm::valid_utf8(f.path))
        .set("added", static_cast<std::uint64_t>(f.added))
        .set("removed", static_cast<std::uint64_t>(f.removed))
        .set("binary", f.binary);
    files.push(std::move(file));
  }
  doc.set("files", std::move(files)).set("patch", swarm::valid_utf8(v.diff.patch));
  return doc;
}

std::string view_text(const swarm::Landing::ReviewView& v, const std::string& check) {
  const swarm::Task& t = v.task;
  std::string out = "task " + swarm::printable(t.id) + " " + t.state_text + " (slot " + swarm::printable(t.slot) +
                    "): " + swarm::printable(t.title) + "\n";
  out += "  branch:  " + v.branch + " at " + short_id(v.tip) + (t.head == v.tip ? ", the head it was closed at" : "") +
         "\n";
  out += "  onto:    " + swarm::printable(v.onto) + " at " + short_id(v.onto_tip) + ", merge base " +
         short_id(v.diff.base) + "\n";
  out += "  checks:  " + (check.empty() ? std::string("none required") : "'" + swarm::printable(check) +
                                                                             "' runs on every land") +
         (v.refused ? "; " + swarm::standing_refusal_text(*v.refused) : "") + "\n";
  out += v.not_approvable.empty()
             ? "  approve: swarm review approve --task " + id_word(t.id) + " --head " + short_id(v.tip) + "\n"
             : "  approve: not now: " + swarm::printable(v.not_approvable) + "\n";
  std::size_t added = 0, removed = 0;
  out += "\n";
  for (const auto& f : v.diff.files) {
    out += " " + swarm::printable(f.path) + " | " +
           (f.binary ? std::string("binary") : "+" + std::to_string(f.added) + " -" + std::to_string(f.removed)) + "\n";
    added += f.added;
    removed += f.removed;
  }
  out += " " + swarm::counted(v.diff.files.size(), "file") + " changed, +" + std::to_string(added) + " -" +
         std::to_string(removed) + "\n\n";
  // The patch is the agent's bytes: shown escaped, line by line.
  out += swarm::printable(v.diff.patch, true);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

VerbResult review_show(const ReviewShowRequest& r, Context& ctx, Reporter&) {
  auto landing = ctx.landing();
  const std::string onto = landing.onto(r.onto);
  const auto view = landing.review_view(onto, r.task);
  const std::string check = ctx.workspace().load_config().check;
  VerbResult out;
  out.doc = view_json(view, check);
  out.text = view_text(view, check);
  return out;
}

// --slot and --task: what approve and reject name (one of them).
OptionTable<ReviewRequest> target_options() {
  OptionTable<ReviewRequest> options;
  options
      .text(&ReviewRequest::slot, {.name = "--slot",
                                   .value_name = "SLOT",
                                   .help = "The slot whose last closed task is reviewed",
                                   .check = swarm::require_slot_name})
      .text(&ReviewRequest::task,
            task_id_option("--task", "ID", "The task reviewed (its slot is the one in its record)"));
  return options;
}

}  // namespace

VerbSpec review_approve_verb() {
  auto options = target_options()
                     .text(&ReviewRequest::head, {.name = "--head",
                                                  .value_name = "SHA",
                                                  .help = "The commit reviewed: refused (exit 3) unless it is still "
                                                          "the tip",
                                                  .check = require_head})
                     .done();
  return make_verb<ReviewRequest>(
      {"review", "approve"}, "Approve the task's branch at its tip",
      "A task in_review (or approved) is approved; a working one is exit 3. No such slot or task: exit 4.",
      std::move(options), require_target, {},
      [](const ReviewRequest& r, Context& ctx, Reporter&) { return review(r, ctx, true); });
}

VerbSpec review_reject_verb() {
  auto options = target_options()
                     .text(&ReviewRequest::reason,
                           {.name = "--reason", .value_name = "TEXT", .help = "Why, kept in the record (required)"})
                     .done();
  return make_verb<ReviewRequest>(
      {"review", "reject"}, "Send the task back to open with a reason",
      "The slot that worked it may take it up again (`join --task ID`) as rework.", std::move(options),
      require_rejection, {}, [](const ReviewRequest& r, Context& ctx, Reporter&) { return review(r, ctx, false); });
}

VerbSpec review_show_verb() {
  auto options = OptionTable<ReviewShowRequest>()
                     .text(&ReviewShowRequest::task, task_id_option("task", "TASK", "The task", true))
                     .text(&ReviewShowRequest::onto,
                           onto_option("The branch it lands on (default: the hub's default branch)"))
                     .done();
  return make_verb<ReviewShowRequest>(
      {"review", "show"}, "What approving a task approves: its branch, head, diff and checks",
      "Shows the task's branch (swarm/<slot>, or swarm/<slot>.<task> once its slot took up another task), the\n"
      "head a `review approve --task TASK` would approve, its diff against the merge base with the onto branch,\n"
      "the workspace's required check and a check's refusal that stands against that head. Escaped for the\n"
      "terminal; --json: swarm.review.v1 with the patch as text.",
      std::move(options), {}, {}, review_show);
}

}  // namespace cli
