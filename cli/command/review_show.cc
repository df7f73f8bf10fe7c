// swarm review show TASK: what `review approve --task TASK` would approve,
// before anyone approves it: the task's branch (its slot's, or the one it
// was parked at when its slot took up another task), the head and its diff
// against the onto branch, and the checks that stand for or against it.
#include "cli/command/context.h"
#include "swarm/base/text.h"
#include "swarm/landing/landing.h"

namespace cli {

namespace {

struct ShowFlags {
  std::string task;
  std::string onto;
};

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

}  // namespace

Verb add_review_show(CLI::App& review) {
  auto f = std::make_shared<ShowFlags>();
  CLI::App* show = review.add_subcommand("show", "What approving a task approves: its branch, head, diff and checks");
  show->add_option("task", f->task, "The task")->required()->option_text("TASK")->check(task_id_validator());
  show->add_option("--onto", f->onto, "The branch it lands on (default: the hub's default branch)")
      ->option_text("BRANCH");
  show->footer(
      "Shows the task's branch (swarm/<slot>, or swarm/<slot>.<task> once its slot took up another task), the\n"
      "head a `review approve --task TASK` would approve, its diff against the merge base with the onto branch,\n"
      "the workspace's required check and a check's refusal that stands against that head. Escaped for the\n"
      "terminal; --json: swarm.review.v1 with the patch as text.");
  return {show, [f](Context& ctx) {
            if (!f->onto.empty()) swarm::require_branch_name(f->onto, "--onto");
            auto landing = ctx.landing();
            const std::string onto = landing.onto(f->onto);
            const auto view = landing.review_view(onto, f->task);
            const std::string check = ctx.workspace().load_config().check;
            ctx.out().result("review", view_text(view, check), view_json(view, check));
            return 0;
          }};
}

}  // namespace cli
