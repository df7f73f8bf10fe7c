// swarm review: the family's command. Its sub-verbs, approve, reject and
// show, are the verbs layer's (cli/verbs/review.cc).
#include "cli/command/context.h"
#include "cli/command/typed_command.h"

namespace cli {

Verb add_review(CLI::App& app) {
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
  std::vector<Verb> typed;
  for (const char* sub : {"approve", "reject", "show"}) typed.push_back(add_typed(*cmd, *typed_verb({"review", sub})));
  return {cmd, [typed](Context& ctx) {
            for (const auto& verb : typed)
              if (verb.command->parsed()) return verb.run(ctx);
            return 2;
          }};
}

}  // namespace cli
