// swarm task export and import: the whole queue as JSON Lines
// (swarm.task.v1, one task a line) and back, by id. An import checks every
// line before it writes anything, and is idempotent.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/verbs/message_body.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

struct TaskFileRequest {
  std::string file;
};

bool to_standard_output(const TaskFileRequest& r) { return r.file.empty() || r.file == "-"; }

// Where the request is made: FILE is the caller's folder's.
void resolve_file(TaskFileRequest& r, const Context&) {
  if (!to_standard_output(r)) r.file = std::filesystem::absolute(r.file).lexically_normal().string();
}

// Every task, by key, as an item each (standard output) or into FILE.
VerbResult task_export(const TaskFileRequest& r, Context& ctx, Reporter& report) {
  auto [store, journal] = ctx.tasks();
  auto all = store.list();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  std::string lines;
  std::size_t n = 0, corrupt = 0;
  VerbResult out;
  out.items_only = true;
  for (const auto& e : all) {
    if (e.corrupt()) {
      ++corrupt;
      continue;
    }
    const std::string line = swarm::to_json(*e.task);
    ++n;
    if (!to_standard_output(r)) lines += line + "\n";
    else if (!report.item(swarm::Json::parse(line), line + "\n")) return out;
  }
  if (corrupt > 0) report.warn(swarm::counted(corrupt, "corrupt task record") + " left out");
  if (to_standard_output(r)) return out;
  std::ofstream file(r.file, std::ios::binary | std::ios::trunc);
  file << lines;
  file.close();
  if (!file) throw swarm::Error(swarm::Errc::filesystem, "could not write " + swarm::printable(r.file));
  report.note("exported " + swarm::counted(n, "task") + " to " + swarm::printable(r.file));
  return out;
}

// FILE's tasks, each line read and checked before anything is written.
std::vector<swarm::Task> tasks_of(const std::string& path) {
  const std::string shown = swarm::printable(path);
  std::uint64_t size = 0;
  const swarm::UniqueFd fd = open_regular_file(path, shown, &size);
  std::string all;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw swarm::Error(swarm::Errc::bad_input, "cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    all.append(buffer, static_cast<std::size_t>(n));
  }
  std::vector<swarm::Task> tasks;
  std::size_t number = 0;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = std::min(all.find('\n', at), all.size());
    const std::string line = all.substr(at, end - at);
    at = end + 1;
    ++number;
    if (line.empty()) continue;
    auto parsed = swarm::parse_task(line);
    if (!parsed.task)
      throw swarm::Error(swarm::Errc::bad_input, shown + " line " + std::to_string(number) + ": " +
                                                     parsed.corrupt_reason + "; nothing was imported");
    swarm::require_task_id(parsed.task->id);
    tasks.push_back(std::move(*parsed.task));
  }
  return tasks;
}

VerbResult task_import(const TaskFileRequest& r, Context& ctx, Reporter&) {
  const std::vector<swarm::Task> tasks = tasks_of(r.file);
  auto [store, journal] = ctx.tasks();
  // The counter first moves past every T-<n> of the file: no add, now or
  // later, is given an id this import writes.
  std::uint64_t highest = 0;
  for (const auto& t : tasks)
    if (auto n = swarm::generated_number(t.id)) highest = std::max(highest, *n);
  store.move_counter_past(highest);
  std::uint64_t created = 0, updated = 0, same = 0;
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
  VerbResult out;
  out.doc.set("created", created).set("updated", updated).set("unchanged", same);
  out.text = std::to_string(created) + " created, " + std::to_string(updated) + " updated, " + std::to_string(same) +
             " unchanged\n";
  return out;
}

}  // namespace

VerbSpec task_export_verb() {
  auto options = OptionTable<TaskFileRequest>()
                     .text(&TaskFileRequest::file,
                           {.name = "file", .value_name = "FILE", .help = "Where to write (default: stdout)"})
                     .done();
  auto v = make_verb<TaskFileRequest>({"task", "export"}, "Every task as JSON Lines (swarm.task.v1), to FILE or stdout",
                                      "", std::move(options), {}, resolve_file, task_export);
  v.items = true;
  return v;
}

VerbSpec task_import_verb() {
  auto options = OptionTable<TaskFileRequest>()
                     .text(&TaskFileRequest::file,
                           {.name = "file", .value_name = "FILE", .help = "An export", .required = true})
                     .done();
  return make_verb<TaskFileRequest>({"task", "import"}, "Create or update tasks from JSON Lines, by id (idempotent)",
                                    "", std::move(options), {}, resolve_file, task_import);
}

}  // namespace cli
