// swarm task list and swarm task show: the work queue as it stands. (What
// changes it, add, edit, cancel, reopen, import, is the command line's:
// cli/command/task.cc; claims are join --next and run --next.)
#include <algorithm>

#include "cli/verbs/documents/documents.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

struct TaskListRequest {
  std::vector<std::string> states, labels;
  bool ready = false;
};

struct TaskShowRequest {
  std::string id;
};

const std::vector<std::string> kStates = {"open", "working", "in_review", "approved", "completed", "failed",
                                          "cancelled"};

// Before any I/O: the states are states, the labels labels.
void require_list_request(const TaskListRequest& r) {
  for (const auto& s : r.states)
    if (!swarm::task_state_of(s))
      throw swarm::Error(swarm::Errc::bad_input, "bad --state '" + swarm::printable(s) +
                                                     "': open, working, in_review, approved, completed, failed or "
                                                     "cancelled");
  swarm::require_task_labels(r.labels);
}

// Whether `e` is listed: a corrupt record only when nothing filters.
bool listed(const swarm::TaskEntry& e, const TaskListRequest& r, const std::vector<swarm::TaskState>& states,
            const swarm::StateOf& state_of) {
  if (e.corrupt()) return !r.ready && states.empty() && r.labels.empty();
  const swarm::Task& t = *e.task;
  if (r.ready && !swarm::is_ready(t, state_of)) return false;
  if (!states.empty() && std::find(states.begin(), states.end(), t.state()) == states.end()) return false;
  for (const auto& l : r.labels)
    if (std::find(t.labels.begin(), t.labels.end(), l) == t.labels.end()) return false;
  return true;
}

VerbResult task_list(const TaskListRequest& r, Context& ctx, Reporter& report) {
  std::vector<swarm::TaskState> states;
  for (const auto& s : r.states) states.push_back(*swarm::task_state_of(s));
  auto [store, journal] = ctx.tasks();
  auto all = store.list();
  swarm::log::phase("task list: listed");
  const auto state_of = states_of(all);
  std::vector<const swarm::TaskEntry*> shown;
  const auto corrupt = std::count_if(all.begin(), all.end(), [](const swarm::TaskEntry& e) { return e.corrupt(); });
  for (const auto& e : all)
    if (listed(e, r, states, state_of)) shown.push_back(&e);
  sort_listed(shown);
  VerbResult out;
  for (const auto* e : shown) {
    if (e->corrupt()) {
      out.text += swarm::printable(e->key) + " - corrupt - " + swarm::printable(e->corrupt_reason) + "\n";
      continue;
    }
    const swarm::Task& t = *e->task;
    out.text += swarm::printable(t.id) + " " + std::to_string(t.priority) + " " + t.state_text + " " +
                (t.slot.empty() ? "-" : swarm::printable(t.slot)) + " " + swarm::printable(t.title) + "\n";
  }
  if (corrupt > 0)
    report.warn(swarm::counted(static_cast<std::size_t>(corrupt), "corrupt task record") +
                "; `swarm doctor --fix` removes them");
  swarm::log::phase("task list: filtered");
  out.verb = "tasks";
  out.doc = tasks_document(shown, state_of);
  return out;
}

// A task for people: its line, state, claim, labels, afters, result and body.
std::string task_text(const swarm::TaskEntry& e) {
  if (e.corrupt()) return "task record " + swarm::printable(e.key) + " is corrupt: " + swarm::printable(e.corrupt_reason) + "\n";
  const swarm::Task& t = *e.task;
  std::string text = swarm::printable(t.id) + ": " + swarm::printable(t.title) + "\n  state " + t.state_text +
                     ", priority " + std::to_string(t.priority) + ", attempts " + std::to_string(t.attempts) + " of " +
                     std::to_string(t.max_attempts) + "\n";
  if (!t.slot.empty()) text += "  slot " + swarm::printable(t.slot) + " on " + swarm::printable(t.host) + "\n";
  if (!t.labels.empty()) {
    text += "  labels";
    for (const auto& l : t.labels) text += " " + swarm::printable(l);
    text += "\n";
  }
  if (!t.after.empty()) {
    text += "  after";
    for (const auto& a : t.after) text += " " + swarm::printable(a);
    text += "\n";
  }
  if (!t.result.empty()) text += "  result: " + swarm::printable(t.result) + "\n";
  if (!t.body.empty()) text += "\n" + swarm::printable(t.body, true) + "\n";
  return text;
}

VerbResult task_show(const TaskShowRequest& r, Context& ctx, Reporter& report) {
  auto [store, journal] = ctx.tasks();
  auto e = store.get(r.id);
  if (!e) throw swarm::Error(swarm::Errc::not_found, "no task " + swarm::printable(r.id) + "; see `swarm task list`");
  swarm::JournalQuery query;
  query.thing = swarm::Thing::task;
  query.name = e->key;
  query.buckets = {store.bucket_name()};
  std::vector<swarm::Event> events;
  try {
    events = journal.read(query);
  } catch (const swarm::Error& err) {
    report.warn(std::string("the task's journal could not be read: ") + err.what());
  }
  std::vector<swarm::TaskEntry> afters;
  if (e->task)
    for (const auto& a : e->task->after)
      if (auto ae = store.get(a)) afters.push_back(std::move(*ae));
  VerbResult out;
  out.doc = task_json(*e, states_of(afters));
  out.text = task_text(*e);
  swarm::Json history = swarm::Json::array();
  if (!events.empty()) out.text += "\n";
  for (const auto& ev : events) {
    history.push(ev.to_json());
    out.text += "  " + (ev.time ? swarm::format_rfc3339(*ev.time) : std::string("-")) + " " + ev.kind + " " +
                swarm::printable(swarm::detail_text(ev.detail)) + "\n";
  }
  out.doc.set("events", std::move(history));
  return out;
}

}  // namespace

VerbSpec task_list_verb() {
  auto options =
      OptionTable<TaskListRequest>()
          .texts(&TaskListRequest::states, {.name = "--state",
                                            .value_name = "S",
                                            .help = "Only tasks in this state (repeat for more)",
                                            .choices = kStates})
          .texts(&TaskListRequest::labels, task_label_option("Only tasks with this label (repeat: all of them)"))
          .flag(&TaskListRequest::ready, {.name = "--ready", .help = "Only ready tasks: open, and every --after task "
                                                                     "completed"})
          .done();
  return make_verb<TaskListRequest>({"task", "list"}, "Tasks by priority, then age: ID PRI STATE SLOT TITLE", "",
                                    std::move(options), require_list_request, {}, task_list);
}

VerbSpec task_show_verb() {
  auto options = OptionTable<TaskShowRequest>()
                     .text(&TaskShowRequest::id, task_id_option("id", "TASK", "Task id", true))
                     .done();
  return make_verb<TaskShowRequest>({"task", "show"}, "One task and its journal", "", std::move(options), {}, {},
                                    task_show);
}

}  // namespace cli
