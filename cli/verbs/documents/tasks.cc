// swarm.tasks.v1: the queue as `task list --json`, /api/tasks and the
// task_list tool hand it out.
#include "cli/verbs/documents/documents.h"
#include <algorithm>
#include "swarm/tasks/task_rules.h"

namespace cli {

swarm::Json task_json(const swarm::TaskEntry& e, const swarm::StateOf& state_of) {
  if (e.corrupt()) {
    swarm::Json j = swarm::Json::object();
    j.set("key", e.key).set("revision", e.revision).set("state", "corrupt").set("error", e.corrupt_reason);
    return j;
  }
  swarm::Json j = swarm::Json::parse(swarm::to_json(*e.task));
  j.set("revision", e.revision).set("ready", swarm::is_ready(*e.task, state_of));
  return j;
}

void sort_listed(std::vector<const swarm::TaskEntry*>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const swarm::TaskEntry* a, const swarm::TaskEntry* b) {
    if (a->corrupt() || b->corrupt()) return !a->corrupt() && b->corrupt();
    return swarm::listed_before(*a->task, *b->task);
  });
}

swarm::StateOf states_of(const std::vector<swarm::TaskEntry>& all) {
  std::vector<const swarm::TaskEntry*> each;
  each.reserve(all.size());
  for (const auto& e : all) each.push_back(&e);
  return states_of(each);
}

swarm::StateOf states_of(const std::vector<const swarm::TaskEntry*>& all) {
  auto states = std::make_shared<std::unordered_map<std::string_view, swarm::TaskState>>();
  states->reserve(all.size());
  for (const auto* e : all)
    if (e->task) (*states)[e->task->id] = e->task->state();
  return [states](const std::string& id) -> std::optional<swarm::TaskState> {
    auto it = states->find(id);
    return it == states->end() ? std::nullopt : std::optional(it->second);
  };
}

swarm::Json tasks_document(const std::vector<const swarm::TaskEntry*>& shown, const swarm::StateOf& state_of) {
  swarm::Json tasks = swarm::Json::array();
  for (const auto* e : shown) tasks.push(task_json(*e, state_of));
  swarm::Json doc = swarm::Json::object();
  doc.set("tasks", std::move(tasks));
  return with_schema("tasks", std::move(doc));
}

}  // namespace cli
