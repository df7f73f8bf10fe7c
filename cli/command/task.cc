// swarm task: the workspace's work queue by hand (add, edit, cancel, reopen,
// export, import; list and show: cli/verbs/tasks.cc). Claims are join
// --next and run --next; close and land move a task on.
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
  std::string id, title, body, body_file, reason, file;
  std::int64_t priority = -1;
  std::int64_t max_attempts = -1;
  std::vector<std::string> labels, after, states;
  bool ready = false;
};

swarm::TimePoint now_ms() { return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()); }

std::string read_body(const TaskFlags& f) {
  std::string body = f.body;
  if (!f.body_file.empty()) {
    std::ifstream in(f.body_file, std::ios::binary);
    if (!in) throw swarm::Error(swarm::Errc::bad_input, "--body-file " + swarm::printable(f.body_file) + ": cannot read it");
    std::ostringstream all;
    all << in.rdbuf();
    body = all.str();
  }
  if (body.size() > swarm::kMaxBodyBytes || !swarm::is_valid_utf8(body))
    throw swarm::Error(swarm::Errc::bad_input, "bad body: at most " + std::to_string(swarm::kMaxBodyBytes) +
                                                   " bytes of UTF-8 text");
  return body;
}

void require_labels(const std::vector<std::string>& labels) {
  if (labels.size() > swarm::kMaxLabels)
    throw swarm::Error(swarm::Errc::bad_input, "at most " + std::to_string(swarm::kMaxLabels) + " labels");
  for (const auto& l : labels) swarm::require_task_label(l);
}

int run_add(Context& ctx, const TaskFlags& f) {
  swarm::require_task_title(f.title);
  if (!f.id.empty()) swarm::require_task_id(f.id);
  require_labels(f.labels);
  for (const auto& a : f.after) swarm::require_task_id(a);
  const std::string body = read_body(f);
  auto [store, journal] = ctx.tasks();
  swarm::Task t;
  t.title = f.title;
  t.body = body;
  t.priority = f.priority < 0 ? swarm::kDefaultPriority : static_cast<std::uint64_t>(f.priority);
  t.labels = f.labels;
  t.after = f.after;
  t.max_attempts = f.max_attempts < 0 ? swarm::kDefaultMaxAttempts : static_cast<std::uint64_t>(f.max_attempts);
  t.created_at = t.updated_at = now_ms();
  t.created_by = ctx.me().host + ":" + std::to_string(::getpid());
  if (!t.after.empty()) swarm::require_after(f.id.empty() ? "\n(new)" : f.id, t.after, store.list());
  std::uint64_t revision = 0;
  if (!f.id.empty()) {
    t.id = f.id;
    revision = store.create(t);
  } else {
    // A generated id taken (by hand, by an import of an older swarm): the
    // counter moves past every T-<n> the queue holds, and the add goes on.
    constexpr int kIdAttempts = 8;
    for (int attempt = 1;; ++attempt) {
      t.id = store.next_generated_id();
      try {
        revision = store.create(t);
        break;
      } catch (const swarm::Error& e) {
        if (e.kind() != swarm::Errc::conflict || attempt >= kIdAttempts) throw;
        store.move_counter_past(store.highest_generated());
      }
    }
  }
  journal.record(swarm::task_add_event(store.bucket_name(), t, swarm::Actor::here(ctx.me()), revision));
  swarm::Json doc = swarm::Json::parse(swarm::to_json(t));
  doc.set("revision", revision);
  ctx.out().result("task", swarm::printable(t.id) + "\n", std::move(doc));
  return 0;
}

// A change by hand, journaled as an edit or a move.
int run_change(Context& ctx, const TaskFlags& f, const std::string& what) {
  swarm::require_task_id(f.id);
  if (what == "edit") {
    if (!f.title.empty()) swarm::require_task_title(f.title);
    for (const auto& l : f.labels) {
      if (l.size() < 2 || (l[0] != '+' && l[0] != '-'))
        throw swarm::Error(swarm::Errc::bad_input, "bad --label '" + swarm::printable(l) + "': +LABEL adds, -LABEL removes");
      swarm::require_task_label(l.substr(1));
    }
    for (const auto& a : f.after) {
      if (a.size() < 2 || (a[0] != '+' && a[0] != '-'))
        throw swarm::Error(swarm::Errc::bad_input, "bad --after '" + swarm::printable(a) + "': +ID adds, -ID removes");
      swarm::require_task_id(a.substr(1));
    }
  }
  const std::string body = what == "edit" && (!f.body.empty() || !f.body_file.empty()) ? read_body(f) : "";
  auto [store, journal] = ctx.tasks();
  std::vector<swarm::TaskEntry> all;
  if (what == "edit" && !f.after.empty()) all = store.list();
  std::string fields;
  auto changed = store.change(f.id, [&](swarm::Task& t) {
    fields.clear();
    auto mark = [&](const char* name) { fields += (fields.empty() ? "" : ",") + std::string(name); };
    if (what == "cancel") return swarm::cancel(t, f.reason);
    if (what == "reopen") return swarm::reopen(t);
    if (!f.title.empty() && f.title != t.title) t.title = f.title, mark("title");
    if (f.priority >= 0 && static_cast<std::uint64_t>(f.priority) != t.priority)
      t.priority = static_cast<std::uint64_t>(f.priority), mark("priority");
    if (!f.body.empty() || !f.body_file.empty()) t.body = body, mark("body");
    if (f.max_attempts >= 0) t.max_attempts = static_cast<std::uint64_t>(f.max_attempts), mark("max_attempts");
    auto apply = [](std::vector<std::string>& list, const std::string& op) {
      const std::string v = op.substr(1);
      auto it = std::find(list.begin(), list.end(), v);
      if (op[0] == '+' && it == list.end()) list.push_back(v);
      if (op[0] == '-' && it != list.end()) list.erase(it);
    };
    for (const auto& l : f.labels) apply(t.labels, l);
    if (!f.labels.empty()) mark("labels");
    require_labels(t.labels);
    if (!f.after.empty()) {
      for (const auto& a : f.after) apply(t.after, a);
      swarm::require_after(t.id, t.after, all);
      mark("after");
    }
  });
  const swarm::Actor actor = swarm::Actor::here(ctx.me());
  if (what == "edit")
    journal.record(swarm::task_edit_event(store.bucket_name(), changed.after, fields, actor, changed.revision));
  else
    journal.record(swarm::task_state_event(store.bucket_name(), changed.before.state(), changed.after,
                                           what == "cancel" ? (f.reason.empty() ? "cancelled by hand" : f.reason)
                                                            : "reopened by hand",
                                           actor, changed.revision));
  swarm::Json doc = swarm::Json::parse(swarm::to_json(changed.after));
  doc.set("revision", changed.revision);
  ctx.out().result("task", swarm::printable(changed.after.id) + " " + changed.after.state_text + "\n", std::move(doc));
  return 0;
}

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

CLI::App* with_id(CLI::App* cmd, TaskFlags& f) {
  cmd->add_option("id", f.id, "Task id")->required()->check(task_id_validator());
  return cmd;
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
  CLI::App* add = cmd->add_subcommand("add", "Add a task; prints its id");
  add->add_option("title", f->title, "One line of text, at most 200 bytes")->required();
  add->add_option("--id", f->id, "Its id (default: T-<n>, generated)")->check(task_id_validator());
  add->add_option("--priority", f->priority, "0 (most urgent) to 4; default 2")->transform(decimal_in(0, 4));
  add->add_option("--label", f->labels, "A label (repeat for more)")->option_text("L");
  add->add_option("--after", f->after, "A task that must be completed first (repeat for more)")->option_text("ID");
  add->add_option("--body", f->body, "What to do, in detail")->option_text("TEXT");
  add->add_option("--body-file", f->body_file, "The body from a file")->option_text("F");
  add->add_option("--max-attempts", f->max_attempts, "Failed claims before the task fails; default 3")
      ->transform(decimal_in(1, static_cast<std::int64_t>(swarm::kMaxAttemptsLimit)));
  add->footer("An existing id is exit 3; an --after id that does not exist, or a cycle, is exit 2.");
  // What only reads is the verbs layer's (cli/verbs/tasks.cc).
  const Verb list = add_typed(*cmd, *typed_verb({"task", "list"}));
  const Verb show = add_typed(*cmd, *typed_verb({"task", "show"}));
  CLI::App* edit = with_id(cmd->add_subcommand("edit", "Change a task's title, priority, labels, afters or body"), *f);
  edit->add_option("--title", f->title, "A new title");
  edit->add_option("--priority", f->priority, "0 to 4")->transform(decimal_in(0, 4));
  edit->add_option("--label", f->labels, "+L adds a label, -L removes one")->option_text("+L|-L")->allow_extra_args(false);
  edit->add_option("--after", f->after, "+ID adds a task to come after, -ID removes one")->option_text("+ID|-ID");
  edit->add_option("--body", f->body, "A new body")->option_text("TEXT");
  edit->add_option("--body-file", f->body_file, "A new body from a file")->option_text("F");
  edit->add_option("--max-attempts", f->max_attempts, "Failed claims before the task fails")
      ->transform(decimal_in(1, static_cast<std::int64_t>(swarm::kMaxAttemptsLimit)));
  CLI::App* cancel = with_id(cmd->add_subcommand("cancel", "Cancel a task (reopen brings it back)"), *f);
  cancel->add_option("--reason", f->reason, "Why, kept in the record")->option_text("TEXT");
  CLI::App* reopen = with_id(cmd->add_subcommand("reopen", "Bring a failed or cancelled task back to open"), *f);
  CLI::App* exp = cmd->add_subcommand("export", "Every task as JSON Lines (swarm.task.v1), to FILE or stdout");
  exp->add_option("file", f->file, "Where to write (default: stdout)");
  CLI::App* imp = cmd->add_subcommand("import", "Create or update tasks from JSON Lines, by id (idempotent)");
  imp->add_option("file", f->file, "An export")->required();
  return {cmd, [f, add, list, show, edit, cancel, reopen, exp, imp](Context& ctx) {
            if (add->parsed()) return run_add(ctx, *f);
            if (list.command->parsed()) return list.run(ctx);
            if (show.command->parsed()) return show.run(ctx);
            if (edit->parsed()) return run_change(ctx, *f, "edit");
            if (cancel->parsed()) return run_change(ctx, *f, "cancel");
            if (reopen->parsed()) return run_change(ctx, *f, "reopen");
            if (exp->parsed()) return run_export(ctx, *f);
            if (imp->parsed()) return run_import(ctx, *f);
            return 2;
          }};
}

}  // namespace cli
