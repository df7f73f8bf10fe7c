// swarm task: the workspace's work queue by hand, the family's command.
// Its sub-verbs are the verbs layer's (list and show: cli/verbs/tasks.cc;
// add, edit, cancel, reopen: task_changes.cc; export, import:
// task_files.cc). Claims are join --next and run --next; close and land
// move a task on.
#include "cli/command/context.h"
#include "cli/command/typed_command.h"

namespace cli {

Verb add_task(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("task", "The work queue: add, list, show, edit, cancel, reopen, export, import");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  swarm task add 'Fix the parser' --priority 1 --label backend   # prints the id, T-1\n"
      "  swarm task add 'Ship it' --after T-1\n"
      "  swarm task list --ready\n"
      "  swarm join --slot a1 --next --label backend                   # claims the most urgent ready task\n"
      "States: open -> working -> in_review -> approved -> completed; failed and cancelled by the way.");
  // Each sub-verb is the verbs layer's, bound under this family.
  std::vector<Verb> typed;
  for (const char* sub : {"add", "list", "show", "edit", "cancel", "reopen", "export", "import"})
    typed.push_back(add_typed(*cmd, *typed_verb({"task", sub})));
  return {cmd, [typed](Context& ctx) {
            for (const auto& verb : typed)
              if (verb.command->parsed()) return verb.run(ctx);
            return 2;
          }};
}

}  // namespace cli
