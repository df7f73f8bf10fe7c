// Doctor's stages over the stores beside the sessions: the task queue (its
// records and the claims that lapsed), the bus (its inboxes' cursors) and
// the blobs its messages name.
#include <algorithm>
#include <map>
#include <set>
#include <span>

#include "kv/bucket.h"
#include "swarm/base/error.h"
#include "swarm/base/text.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/doctor/checks.h"
#include "swarm/lease/rules.h"

namespace swarm::doctor {

namespace d = ::swarm::doctor;

// Adds a stage's findings to the report, then fixes them when asked (added
// first: a fix that finds NATS gone leaves every one reported).
void report_stage(DoctorReport& report, d::Findings found, const d::FixInput* fixes, d::FixResult& fixed) {
  const std::size_t from = report.findings.size();
  report.findings.insert(report.findings.end(), std::make_move_iterator(found.begin()),
                         std::make_move_iterator(found.end()));
  if (fixes) d::fix_findings(std::span<Finding>(report.findings).subspan(from), *fixes, fixed);
}

// Working tasks whose claim lapsed (their task lease gone or expired: the
// agent died, and its session with it): a notice each, until the next
// `join --next` claims it again (adr/0038).
void check_lapsed_claims(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config,
                         const std::vector<TaskEntry>& tasks) {
  std::vector<const Task*> working;
  std::vector<std::string> names;
  for (const auto& e : tasks)
    if (e.task && e.task->state() == TaskState::working) {
      working.push_back(&*e.task);
      names.push_back(task_lease_name(e.task->id));
    }
  if (working.empty()) return;
  const LeaseStore leases = LeaseStore::bind(nats, config.names());
  std::map<std::string, LeaseEntry> held;
  for (auto& e : leases.get_together(names)) held.emplace(e.name, std::move(e));
  const TimePoint now = leases.server_clock().now();
  for (const Task* t : working) {
    auto it = held.find(task_lease_name(t->id));
    const bool gone = it == held.end();
    if (!gone && (it->second.corrupt() || standing_of(it->second, now).state != LeaseState::expired)) continue;
    report.findings.push_back(d::make_finding(
        Severity::notice, FindingKind::lapsed_claim, t->id,
        "task " + printable(t->id) + " is working for slot " + printable(t->slot) + " (host " + printable(t->host) +
            "), but its claim lapsed (its task lease is " + (gone ? "gone" : "expired") + "): its agent is gone; "
            "the next `swarm join --next` claims it again (attempt " + std::to_string(t->attempts + 2) + " of " +
            std::to_string(t->max_attempts) + ")",
        "swarm join --slot SLOT --task " + shell_word(t->id)));
  }
}

// The task queue: its bucket (a workspace made before tasks has none: a
// notice, `swarm up` makes it), and each record that cannot be read.
void check_tasks(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config, d::FixInput* fixes,
                 d::FixResult& fixed) {
  const auto queue = TaskStore::open_if_exists(nats, config.task_bucket);
  if (!queue) {
    report.findings.push_back(d::make_finding(
        Severity::notice, FindingKind::task_bucket, config.task_bucket,
        "the task bucket " + config.task_bucket + " does not exist: `swarm task` and `join --next` need it", "swarm up"));
    return;
  }
  const std::vector<TaskEntry> tasks = queue->list();
  check_lapsed_claims(report, nats, config, tasks);
  if (fixes) {
    fixes->tasks = &*queue;
    for (const auto& t : tasks) fixes->task_entries[t.key] = &t;
  }
  report_stage(report, d::check_task_records(tasks), fixes, fixed);
  if (fixes) {
    fixes->tasks = nullptr;  // `queue` and `tasks` end here
    fixes->task_entries.clear();
  }
}

// Chunks no description names, younger than this, may be a put's under way.
constexpr std::chrono::minutes kLeftoverAge{10};

// The blobs against the messages the bus keeps (of every workspace whose
// blobs the store holds: one, or every unnamed one of the server): a blob no kept message names any more (retention
// dropped them) is only taking room; a kept message whose blob is gone
// cannot be read whole. Both notices: nothing here is safe to remove, a
// blob may be about to be named by a send under way.
void check_blobs(DoctorReport& report, const kv::Connection& nats, const WorkspaceNames& names, const Bus& bus,
                 bool fix) {
  const Blobs blobs(nats, names);
  const std::vector<std::string> stored = blobs.names();
  std::set<std::string> named;
  std::map<std::string, std::uint64_t> named_at;  // a missing blob: the first message that names it
  bus.for_each_message([&](const Delivered& d) {
    if (!d.message || !d.message->blob) return;
    if (named.insert(d.message->blob->sha256).second) named_at[d.message->blob->sha256] = d.seq;
  });
  const std::set<std::string> have(stored.begin(), stored.end());
  for (const auto& sha : stored)
    if (!named.count(sha))
      report.findings.push_back(d::make_finding(
          Severity::notice, FindingKind::blob_orphan, sha,
          "blob " + sha + " is named by no message the bus keeps (retention dropped the ones that did, or it was "
          "stored by `swarm blob put` and named elsewhere); it only takes room unless someone still has its name",
          "nats object rm swarm-blobs " + sha + "   (once nobody needs it)"));
  for (const auto& sha : named)
    if (!have.count(sha))
      report.findings.push_back(d::make_finding(
          Severity::notice, FindingKind::blob_missing, sha,
          "blob " + sha + " is not in the store, but message " + std::to_string(named_at[sha]) +
              " of the bus names it: `swarm blob get` of it is exit 4",
          "nothing to repair here: send it again (`swarm send --file`)"));
  // Chunks a put killed halfway left, named by no blob: removed by --fix
  // once they are old enough that no put can be writing them now.
  const auto now = std::chrono::system_clock::now();
  for (const auto& left : blobs.leftovers()) {
    const bool old = now - left.last > kLeftoverAge;
    Finding f = d::make_finding(Severity::notice, FindingKind::blob_leftover, left.nuid,
                                "chunks " + left.nuid + " of the blob store are named by no blob (a put killed before "
                                "it finished" + (old ? "" : ", or one under way") + ")",
                                old ? "swarm doctor --fix" : "nothing yet: look again in a few minutes");
    if (fix && old) {
      blobs.remove_leftover(left.nuid);
      f.fixed = true;
      f.fix_note = "removed them";
    }
    report.findings.push_back(std::move(f));
  }
}

// The message bus: its stream (a workspace made before messages has none:
// a notice, `swarm up` makes it), and each inbox whose unacked messages
// retention dropped (a notice: they are gone; an ack past them says so).
void check_bus(DoctorReport& report, const kv::Connection& nats, const WorkspaceConfig& config, bool fix) {
  const WorkspaceNames names = config.names();
  const Bus bus(nats, names);
  const auto st = bus.state();
  if (!st) {
    report.findings.push_back(d::make_finding(
        Severity::notice, FindingKind::bus, names.bus,
        "the message bus (stream " + names.bus + ") does not exist: `swarm send` and `inbox` need it",
        "swarm up"));
    return;
  }
  std::map<std::string, Cursors::Cursor> cursors;
  try {
    cursors = Cursors(nats, names).all(generation_of(*st));
  } catch (const Error& e) {
    if (e.kind() != Errc::not_found && e.kind() != Errc::not_bootstrapped) throw;
  }
  const Cursors inbox_cursors(nats, names);
  for (const auto& [name, cursor] : cursors) {
    const std::uint64_t seq = cursor.seq;
    if (seq > st->last_seq) {
      // No ack writes one: read as nothing acked (every kept message comes again) until it is put right.
      Finding f = d::make_finding(Severity::problem, FindingKind::inbox_cursor, name,
                                  "inbox " + name + "'s cursor says " + std::to_string(seq) + ", past the bus's last "
                                  "message (" + std::to_string(st->last_seq) + "): no ack writes that; its reads "
                                  "start from the bus's first message until it is put right",
                                  "swarm doctor --fix   (or `swarm ack --as " + name + " SEQ`)");
      if (fix) {
        const auto now = inbox_cursors.get(name, *st);
        if (now.beyond) {
          inbox_cursors.forget(name, now.revision);
          f.fixed = true;
          f.fix_note = "removed it: the inbox reads from the bus's first message, and its next ack sets it";
        }
      }
      report.findings.push_back(std::move(f));
      continue;
    }
    if (seq == 0 || st->first_seq <= seq + 1) continue;  // 0: a cursor of a bus made before this one
    if (!Cursors::age_may_have_dropped(cursor.at_ms, *st)) continue;  // others' acks, not age, moved the bus on
    const std::uint64_t dropped = st->first_seq - 1 - seq;
    report.findings.push_back(d::make_finding(
        Severity::notice, FindingKind::inbox_gap, name,
        "inbox " + name + ": retention dropped " + std::to_string(dropped) + " bus message(s) after its cursor (seq " +
            std::to_string(seq) + ") before it acked them; those to " + name + " or to all are lost",
        "swarm ack --as " + name + " " + std::to_string(st->first_seq - 1) + "   (says they are gone; raise `swarm up "
        "--bus-max-age/--bus-max-bytes` to keep more)"));
  }
  if (st->config.max_bytes > 0 && st->bytes * 10 >= static_cast<std::uint64_t>(st->config.max_bytes) * 9)
    report.findings.push_back(d::make_finding(
        Severity::problem, FindingKind::bus_full, names.bus,
        "the message bus holds " + std::to_string(st->bytes >> 20) + " of its " +
            std::to_string(st->config.max_bytes >> 20) + " MiB: full, it refuses new messages (`swarm send` exit 9) "
            "rather than drop unread ones",
        "swarm inbox --as NAME --ack   (each inbox's acked messages are removed), or swarm up --bus-max-bytes SIZE"));
  check_blobs(report, nats, names, bus, fix);
}

}  // namespace swarm::doctor
