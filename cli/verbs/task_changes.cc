// swarm task add, edit, cancel and reopen: the work queue changed by hand,
// each change journaled. (What only reads, list and show, is tasks.cc;
// export and import, whole files, the command line's: cli/command/task.cc;
// claims are join --next and run --next.)
#include <algorithm>
#include <filesystem>

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/verbs/message_body.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/events.h"
#include "swarm/tasks/task_rules.h"

namespace cli {

namespace {

// What add and edit take; cancel and reopen only the id (and a reason).
struct TaskChangeRequest {
  std::string id, title, body, body_file, reason;
  std::optional<std::int64_t> priority, max_attempts;
  std::vector<std::string> labels, after;
};

enum class Change { edit, cancel, reopen };

swarm::TimePoint now_ms() { return std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()); }

bool has_body(const TaskChangeRequest& r) { return !r.body.empty() || !r.body_file.empty(); }

// --body, or --body-file read whole (a regular file only: a FIFO would
// wait), at most kMaxBodyBytes of UTF-8.
std::string body_of(const TaskChangeRequest& r) {
  std::string body = r.body;
  if (!r.body_file.empty()) {
    const std::string shown = "--body-file " + swarm::printable(r.body_file);
    std::uint64_t size = 0;
    const swarm::UniqueFd fd = open_regular_file(r.body_file, shown, &size);
    if (size > swarm::kMaxBodyBytes) size = swarm::kMaxBodyBytes + 1;
    body.assign(static_cast<std::size_t>(size), '\0');
    std::size_t got = 0;
    while (got < body.size()) {
      const ssize_t n = ::read(fd.get(), body.data() + got, body.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw swarm::Error(swarm::Errc::bad_input, shown + ": cannot read it (" + std::strerror(errno) + ")");
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    body.resize(got);
  }
  if (body.size() > swarm::kMaxBodyBytes || !swarm::is_valid_utf8(body))
    throw swarm::Error(swarm::Errc::bad_input,
                       "bad body: at most " + std::to_string(swarm::kMaxBodyBytes) + " bytes of UTF-8 text");
  return body;
}

// Where the request is made: a --body-file names a file of the caller's folder.
void resolve_body_file(TaskChangeRequest& r, const Context&) {
  if (!r.body_file.empty()) r.body_file = std::filesystem::absolute(r.body_file).lexically_normal().string();
}

// A task's document as add and its changes give it: the record and its revision.
VerbResult task_result(const swarm::Task& t, std::uint64_t revision, std::string text) {
  VerbResult out;
  out.doc = swarm::Json::parse(swarm::to_json(t));
  out.doc.set("revision", revision);
  out.text = std::move(text);
  return out;
}

VerbResult task_add(const TaskChangeRequest& r, Context& ctx, Reporter&) {
  const std::string body = body_of(r);
  auto [store, journal] = ctx.tasks();
  swarm::Task t;
  t.title = r.title;
  t.body = body;
  t.priority = r.priority ? static_cast<std::uint64_t>(*r.priority) : swarm::kDefaultPriority;
  t.labels = r.labels;
  t.after = r.after;
  t.max_attempts = r.max_attempts ? static_cast<std::uint64_t>(*r.max_attempts) : swarm::kDefaultMaxAttempts;
  t.created_at = t.updated_at = now_ms();
  t.created_by = ctx.me().host + ":" + std::to_string(::getpid());
  if (!t.after.empty()) swarm::require_after(r.id.empty() ? "\n(new)" : r.id, t.after, store.list());
  std::uint64_t revision = 0;
  if (!r.id.empty()) {
    t.id = r.id;
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
  return task_result(t, revision, swarm::printable(t.id) + "\n");
}

// +V adds V to `list`, -V removes it.
void apply(std::vector<std::string>& list, const std::string& op) {
  const std::string v = op.substr(1);
  auto it = std::find(list.begin(), list.end(), v);
  if (op[0] == '+' && it == list.end()) list.push_back(v);
  if (op[0] == '-' && it != list.end()) list.erase(it);
}

// An edit's fields applied to `t`; `fields` gets the names of those changed.
void edit_fields(const TaskChangeRequest& r, const std::string& body, const std::vector<swarm::TaskEntry>& all,
                 swarm::Task& t, std::string& fields) {
  fields.clear();
  auto mark = [&](const char* name) { fields += (fields.empty() ? "" : ",") + std::string(name); };
  if (!r.title.empty() && r.title != t.title) t.title = r.title, mark("title");
  if (r.priority && static_cast<std::uint64_t>(*r.priority) != t.priority)
    t.priority = static_cast<std::uint64_t>(*r.priority), mark("priority");
  if (has_body(r)) t.body = body, mark("body");
  if (r.max_attempts) t.max_attempts = static_cast<std::uint64_t>(*r.max_attempts), mark("max_attempts");
  for (const auto& l : r.labels) apply(t.labels, l);
  if (!r.labels.empty()) mark("labels");
  swarm::require_task_labels(t.labels);
  if (!r.after.empty()) {
    for (const auto& a : r.after) apply(t.after, a);
    swarm::require_after(t.id, t.after, all);
    mark("after");
  }
}

// A change by hand, journaled as an edit or a move.
VerbResult task_change(const TaskChangeRequest& r, Context& ctx, Change what) {
  const std::string body = what == Change::edit && has_body(r) ? body_of(r) : "";
  auto [store, journal] = ctx.tasks();
  std::vector<swarm::TaskEntry> all;
  if (what == Change::edit && !r.after.empty()) all = store.list();
  std::string fields;
  auto changed = store.change(r.id, [&](swarm::Task& t) {
    if (what == Change::cancel) return swarm::cancel(t, r.reason);
    if (what == Change::reopen) return swarm::reopen(t);
    edit_fields(r, body, all, t, fields);
  });
  const swarm::Actor actor = swarm::Actor::here(ctx.me());
  if (what == Change::edit)
    journal.record(swarm::task_edit_event(store.bucket_name(), changed.after, fields, actor, changed.revision));
  else
    journal.record(swarm::task_state_event(store.bucket_name(), changed.before.state(), changed.after,
                                           what == Change::cancel
                                               ? (r.reason.empty() ? "cancelled by hand" : r.reason)
                                               : "reopened by hand",
                                           actor, changed.revision));
  return task_result(changed.after, changed.revision,
                     swarm::printable(changed.after.id) + " " + changed.after.state_text + "\n");
}

// "+V" or "-V", V checked by `check`: what an edit's --label and --after take.
std::function<void(const std::string&)> signed_value(const char* option, const char* meaning,
                                                     void (*check)(std::string_view)) {
  return [option, meaning, check](const std::string& op) {
    if (op.size() < 2 || (op[0] != '+' && op[0] != '-'))
      throw swarm::Error(swarm::Errc::bad_input,
                         std::string("bad ") + option + " '" + swarm::printable(op) + "': " + meaning);
    check(std::string_view(op).substr(1));
  };
}

OptionSpec id_option(bool required) {
  return required ? task_id_option("id", "TASK", "Task id", true)
                  : task_id_option("--id", "TASK", "Its id (default: T-<n>, generated)");
}

OptionSpec attempts_option(const char* help) {
  return {.name = "--max-attempts",
          .value_name = "N",
          .help = help,
          .min = 1,
          .max = static_cast<std::int64_t>(swarm::kMaxAttemptsLimit)};
}

}  // namespace

VerbSpec task_add_verb() {
  auto options =
      OptionTable<TaskChangeRequest>()
          .text(&TaskChangeRequest::title, {.name = "title",
                                            .value_name = "TITLE",
                                            .help = "One line of text, at most 200 bytes",
                                            .required = true,
                                            .check = [](const std::string& t) { swarm::require_task_title(t); }})
          .text(&TaskChangeRequest::id, id_option(false))
          .maybe_number(&TaskChangeRequest::priority,
                        {.name = "--priority", .value_name = "P", .help = "0 (most urgent) to 4; default 2", .max = 4})
          .texts(&TaskChangeRequest::labels, task_label_option("A label (repeat for more)"))
          .texts(&TaskChangeRequest::after,
                 task_id_option("--after", "ID", "A task that must be completed first (repeat for more)"))
          .text(&TaskChangeRequest::body, {.name = "--body", .value_name = "TEXT", .help = "What to do, in detail"})
          .text(&TaskChangeRequest::body_file, {.name = "--body-file", .value_name = "F", .help = "The body from a file"})
          .maybe_number(&TaskChangeRequest::max_attempts, attempts_option("Failed claims before the task fails; default 3"))
          .done();
  return make_verb<TaskChangeRequest>(
      {"task", "add"}, "Add a task; prints its id",
      "An existing id is exit 3; an --after id that does not exist, or a cycle, is exit 2.", std::move(options),
      [](const TaskChangeRequest& r) { swarm::require_task_labels(r.labels); }, resolve_body_file, task_add);
}

VerbSpec task_edit_verb() {
  auto options =
      OptionTable<TaskChangeRequest>()
          .text(&TaskChangeRequest::id, id_option(true))
          .text(&TaskChangeRequest::title, {.name = "--title",
                                            .value_name = "TITLE",
                                            .help = "A new title",
                                            .check = [](const std::string& t) { swarm::require_task_title(t); }})
          .maybe_number(&TaskChangeRequest::priority, {.name = "--priority", .value_name = "P", .help = "0 to 4", .max = 4})
          .texts(&TaskChangeRequest::labels,
                 {.name = "--label",
                  .value_name = "+L|-L",
                  .help = "+L adds a label, -L removes one",
                  .check = signed_value("--label", "+LABEL adds, -LABEL removes", swarm::require_task_label)})
          .texts(&TaskChangeRequest::after,
                 {.name = "--after",
                  .value_name = "+ID|-ID",
                  .help = "+ID adds a task to come after, -ID removes one",
                  .check = signed_value("--after", "+ID adds, -ID removes", swarm::require_task_id)})
          .text(&TaskChangeRequest::body, {.name = "--body", .value_name = "TEXT", .help = "A new body"})
          .text(&TaskChangeRequest::body_file,
                {.name = "--body-file", .value_name = "F", .help = "A new body from a file"})
          .maybe_number(&TaskChangeRequest::max_attempts, attempts_option("Failed claims before the task fails"))
          .done();
  return make_verb<TaskChangeRequest>(
      {"task", "edit"}, "Change a task's title, priority, labels, afters or body", "", std::move(options), {},
      resolve_body_file,
      [](const TaskChangeRequest& r, Context& ctx, Reporter&) { return task_change(r, ctx, Change::edit); });
}

VerbSpec task_cancel_verb() {
  auto options = OptionTable<TaskChangeRequest>()
                     .text(&TaskChangeRequest::id, id_option(true))
                     .text(&TaskChangeRequest::reason,
                           {.name = "--reason", .value_name = "TEXT", .help = "Why, kept in the record"})
                     .done();
  return make_verb<TaskChangeRequest>(
      {"task", "cancel"}, "Cancel a task (reopen brings it back)", "", std::move(options), {}, {},
      [](const TaskChangeRequest& r, Context& ctx, Reporter&) { return task_change(r, ctx, Change::cancel); });
}

VerbSpec task_reopen_verb() {
  auto options = OptionTable<TaskChangeRequest>().text(&TaskChangeRequest::id, id_option(true)).done();
  return make_verb<TaskChangeRequest>(
      {"task", "reopen"}, "Bring a failed or cancelled task back to open", "", std::move(options), {}, {},
      [](const TaskChangeRequest& r, Context& ctx, Reporter&) { return task_change(r, ctx, Change::reopen); });
}

}  // namespace cli
