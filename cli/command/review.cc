// swarm review: approve a slot's task at the head that was reviewed, or
// reject it back to open with a reason. With `up --require-review`,
// `land --ready` takes only tasks approved at their branch's tip.
#include <pwd.h>
#include <unistd.h>

#include "cli/command/context.h"
#include "swarm/base/text.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

struct ReviewFlags {
  std::string slot, task, head, reason;
};

// Who reviews: this user on this host.
std::string reviewer(const Context& ctx) {
  const passwd* pw = ::getpwuid(::geteuid());
  const std::string user = pw != nullptr && pw->pw_name != nullptr ? pw->pw_name : "uid " + std::to_string(::geteuid());
  return user + "@" + ctx.me().host;
}

void require_head(const std::string& head) {
  if (head.empty()) return;
  const bool hex = head.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!hex || head.size() < 7 || head.size() > 64)
    throw swarm::Error(swarm::Errc::bad_input, "bad --head '" + swarm::printable(head.substr(0, 80)) +
                                                   "': a commit id, 7 to 64 lowercase hex digits");
}

int run_review(Context& ctx, const ReviewFlags& f, bool approving) {
  if (f.slot.empty() == f.task.empty())
    throw swarm::Error(swarm::Errc::bad_input, "name what to review: --slot SLOT or --task ID (one of them)");
  require_head(f.head);
  if (!approving) {
    if (f.reason.empty()) throw swarm::Error(swarm::Errc::bad_input, "say why with --reason TEXT");
    if (f.reason.size() > swarm::kMaxTitleBytes * 5 || !swarm::is_valid_utf8(f.reason))
      throw swarm::Error(swarm::Errc::bad_input, "bad --reason: at most 1000 bytes of UTF-8 text");
  }
  auto landing = ctx.landing();
  const auto done = landing.review(f.slot, f.task, approving, f.head, f.reason, reviewer(ctx));
  const swarm::Task& t = done.task;
  swarm::Json doc = swarm::Json::parse(swarm::to_json(t));
  doc.set("revision", done.revision).set("tip", done.tip);
  // What was reviewed is the task's own head; the branch may be past it (the slot's next task).
  const std::string head = done.head.empty() ? "(no head)" : swarm::printable(done.head.substr(0, 12));
  const std::string moved = !done.head.empty() && done.head != done.tip
                                ? "; its branch is at " + done.tip.substr(0, 12) + " now"
                                : "";
  const std::string text = swarm::printable(t.id) + " " + t.state_text + " (slot " + swarm::printable(t.slot) +
                           (approving ? ", approved at " : ", rejected at ") + head + moved + ")\n";
  ctx.out().result("review", text, std::move(doc));
  return 0;
}

}  // namespace

Verb add_review(CLI::App& app) {
  auto f = std::make_shared<ReviewFlags>();
  CLI::App* cmd = app.add_subcommand("review", "Approve a task's branch at the head reviewed, or reject it");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  swarm up --require-review                       # land only what a review approved\n"
      "  swarm review approve --slot a1                  # its task's branch, at its tip now\n"
      "  swarm review approve --task T-3 --head 1a2b3c4  # only if the tip is still 1a2b3c4\n"
      "  swarm review reject --slot a1 --reason 'no tests'\n"
      "A later commit on the branch dismisses an approval (the task goes back to in_review when its slot\n"
      "closes again). With review required, `land --ready` lands only tasks approved at their branch's\n"
      "tip, and `land --slot` of another is exit 3 unless --force (journaled forced).");
  auto with_target = [&](CLI::App* sub) {
    sub->add_option("--slot", f->slot, "The slot whose last closed task is reviewed")
        ->check(slot_name_validator())
        ->option_text("SLOT");
    sub->add_option("--task", f->task, "The task reviewed (its slot is the one in its record)")
        ->check(task_id_validator())
        ->option_text("ID");
    return sub;
  };
  CLI::App* approve = with_target(cmd->add_subcommand("approve", "Approve the task's branch at its tip"));
  approve->add_option("--head", f->head, "The commit reviewed: refused (exit 3) unless it is still the tip")
      ->option_text("SHA");
  approve->footer("A task in_review (or approved) is approved; a working one is exit 3. No such slot or task: exit 4.");
  CLI::App* reject = with_target(cmd->add_subcommand("reject", "Send the task back to open with a reason"));
  reject->add_option("--reason", f->reason, "Why, kept in the record (required)")->option_text("TEXT");
  reject->footer("The slot that worked it may take it up again (`join --task ID`) as rework.");
  const Verb show = add_review_show(*cmd);
  return {cmd, [f, approve, reject, show](Context& ctx) {
            if (show.command->parsed()) return show.run(ctx);
            if (approve->parsed()) return run_review(ctx, *f, true);
            if (reject->parsed()) return run_review(ctx, *f, false);
            return 2;
          }};
}

}  // namespace cli
