// swarm task: the workspace's work queue by hand. Export and import, whole
// files, are here; the other sub-verbs are the verbs layer's (list and
// show: cli/verbs/tasks.cc; add, edit, cancel, reopen: task_changes.cc).
// Claims are join --next and run --next; close and land move a task on.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <unordered_map>
#include <sstream>

#include "cli/command/context.h"
#include "cli/command/typed_command.h"
#include "cli/verbs/documents/documents.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

struct TaskFlags {
  std::string file;
};

int run_export(Context& ctx, const TaskFlags& f) {
  auto [store, journal] = ctx.tasks();
  auto all = store.list();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  std::string lines;
  std::size_t n = 0, corrupt = 0;
  for (const auto& e : all) {
    if (e.corrupt()) {
      ++corrupt;
      continue;
    }
    lines += swarm::to_json(*e.task) + "\n";
    ++n;
  }
  if (corrupt > 0) ctx.out().warn(swarm::counted(corrupt, "corrupt task record") + " left out");
  if (f.file.empty() || f.file == "-") {
    std::cout << lines << std::flush;
    return 0;
  }
  std::ofstream out(f.file, std::ios::binary | std::ios::trunc);
  out << lines;
  out.close();
  if (!out) throw swarm::Error(swarm::Errc::filesystem, "could not write " + swarm::printable(f.file));
  ctx.out().note("exported " + swarm::counted(n, "task") + " to " + swarm::printable(f.file));
  return 0;
}

int run_import(Context& ctx, const TaskFlags& f) {
  std::ifstream in(f.file, std::ios::binary);
  if (!in) throw swarm::Error(swarm::Errc::bad_input, "cannot read " + swarm::printable(f.file));
  // Every line is read and checked before anything is written.
  std::vector<swarm::Task> tasks;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    auto parsed = swarm::parse_task(line);
    if (!parsed.task)
      throw swarm::Error(swarm::Errc::bad_input, swarm::printable(f.file) + " line " + std::to_string(number) + ": " +
                                                     parsed.corrupt_reason + "; nothing was imported");
    swarm::require_task_id(parsed.task->id);
    tasks.push_back(std::move(*parsed.task));
  }
  auto [store, journal] = ctx.tasks();
  // The counter first moves past every T-<n> of the file: no add, now or
  // later, is given an id this import writes.
  std::uint64_t highest = 0;
  for (const auto& t : tasks)
    if (auto n = swarm::generated_number(t.id)) highest = std::max(highest, *n);
  store.move_counter_past(highest);
  std::size_t created = 0, updated = 0, same = 0;
  const swarm::Actor actor = swarm::Actor::here(ctx.me());
  for (const auto& t : tasks) {
    auto e = store.get(t.id);
    if (!e) {
      const auto revision = store.create(t);
      journal.record(swarm::task_add_event(store.bucket_name(), t, actor, revision));
      ++created;
    } else if (!e->corrupt() && swarm::to_json(*e->task) == swarm::to_json(t)) {
      ++same;
    } else {
      const auto revision = store.update(t, e->revision);
      journal.record(swarm::task_edit_event(store.bucket_name(), t, "import", actor, revision));
      ++updated;
    }
  }
  swarm::Json doc = swarm::Json::object();
  doc.set("created", static_cast<std::uint64_t>(created))
      .set("updated", static_cast<std::uint64_t>(updated))
      .set("unchanged", static_cast<std::uint64_t>(same));
  ctx.out().result("task", std::to_string(created) + " created, " + std::to_string(updated) + " updated, " +
                               std::to_string(same) + " unchanged\n",
                   std::move(doc));
  return 0;
}

}  // namespace

Verb add_task(CLI::App& app) {
  auto f = std::make_shared<TaskFlags>();
  CLI::App* cmd = app.add_subcommand("task", "The work queue: add, list, show, edit, cancel, reopen, export, import");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  swarm task add 'Fix the parser' --priority 1 --label backend   # prints the id, T-1\n"
      "  swarm task add 'Ship it' --after T-1\n"
      "  swarm task list --ready\n"
      "  swarm join --slot a1 --next --label backend                   # claims the most urgent ready task\n"
      "States: open -> working -> in_review -> approved -> completed; failed and cancelled by the way.");
  // Sub-verbs of the verbs layer, each bound under this family.
  std::vector<Verb> typed;
  for (const char* sub : {"add", "list", "show", "edit", "cancel", "reopen"})
    typed.push_back(add_typed(*cmd, *typed_verb({"task", sub})));
  CLI::App* exp = cmd->add_subcommand("export", "Every task as JSON Lines (swarm.task.v1), to FILE or stdout");
  exp->add_option("file", f->file, "Where to write (default: stdout)");
  CLI::App* imp = cmd->add_subcommand("import", "Create or update tasks from JSON Lines, by id (idempotent)");
  imp->add_option("file", f->file, "An export")->required();
  return {cmd, [f, typed, exp, imp](Context& ctx) {
            for (const auto& verb : typed)
              if (verb.command->parsed()) return verb.run(ctx);
            if (exp->parsed()) return run_export(ctx, *f);
            if (imp->parsed()) return run_import(ctx, *f);
            return 2;
          }};
}

}  // namespace cli
