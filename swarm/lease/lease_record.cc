#include "swarm/lease/lease_record.h"

#include <cstring>
#include <string_view>

namespace swarm {

namespace {

enum class Field { name, holder, host, host_id, pid, pid_start, token, ttl_ms, acquired_at, renewed_at, transitions,
                   slot, task, order, unknown };

Field field_of(std::string_view name) {
  static const std::pair<std::string_view, Field> kFields[] = {
      {"name", Field::name},        {"holder", Field::holder},       {"host", Field::host},
      {"host_id", Field::host_id},  {"pid", Field::pid},             {"pid_start", Field::pid_start},
      {"token", Field::token},      {"ttl_ms", Field::ttl_ms},       {"acquired_at", Field::acquired_at},
      {"renewed_at", Field::renewed_at}, {"transitions", Field::transitions}, {"slot", Field::slot},
      {"task", Field::task},        {"order", Field::order}};
  for (const auto& [text, field] : kFields)
    if (text == name) return field;
  return Field::unknown;
}

bool is_known(const char* name) { return field_of(name) != Field::unknown; }

constexpr std::uint64_t kMaxPid = 4194304ULL * 1024;
constexpr std::uint64_t kMaxCount = 1ULL << 53;  // exact in the double JSON numbers are read as

bool read_member(const cJSON* item, std::string_view as_written, LeaseRecord* l, std::string* reason) {
  using namespace record;
  std::uint64_t n = 0;
  switch (field_of(item->string)) {
    case Field::name: return read_string(item, &l->name, reason);
    case Field::holder: return read_string(item, &l->holder, reason);
    case Field::host: return read_string(item, &l->host, reason);
    case Field::host_id: return read_string(item, &l->host_id, reason);
    case Field::pid:
      if (!read_count(item, kMaxPid, &n, reason, "a process id")) return false;
      l->pid = static_cast<std::int64_t>(n);
      return true;
    case Field::pid_start: return read_count(item, kMaxCount, &l->pid_start, reason, "a process start time");
    case Field::token: return read_count(item, kMaxCount, &l->token, reason, "a fencing token");
    case Field::ttl_ms: {
      const auto max_ms = static_cast<std::uint64_t>(std::chrono::milliseconds(kMaxLeaseTtl).count());
      if (!read_count(item, max_ms, &n, reason, "a TTL of 1s to 1h in milliseconds")) return false;
      l->ttl = std::chrono::milliseconds(n);
      if (l->ttl < kMinLeaseTtl) {
        *reason = "field 'ttl_ms' is not a TTL of 1s to 1h in milliseconds";
        return false;
      }
      return true;
    }
    case Field::acquired_at: return read_time(item, &l->acquired_at, &l->acquired_at_text, reason);
    case Field::renewed_at: return read_time(item, &l->renewed_at, &l->renewed_at_text, reason);
    case Field::transitions: return read_count(item, kMaxCount, &l->transitions, reason, "a count");
    case Field::slot: return read_string(item, &l->slot, reason);
    case Field::task: return read_string(item, &l->task, reason);
    case Field::order: return read_count(item, kMaxCount, &l->order, reason, "a revision");
    case Field::unknown: break;
  }
  l->unknown_fields.emplace_back(item->string, std::string(as_written));
  return true;
}

}  // namespace

ParsedLease parse_lease(const std::string& text) {
  ParsedLease out;
  LeaseRecord l;
  out.corrupt_reason = record::read_object(text, is_known, [&](const cJSON* item, std::string_view as_written, std::string* reason) {
    return read_member(item, as_written, &l, reason);
  });
  if (!out.corrupt_reason.empty()) return out;
  for (auto [name, empty] : {std::pair{"name", l.name.empty()}, {"holder", l.holder.empty()},
                             {"host", l.host.empty()}, {"ttl_ms", l.ttl.count() == 0}})
    if (empty) {
      out.corrupt_reason = record::missing(name);
      return out;
    }
  out.lease = std::move(l);
  return out;
}

std::string to_json(const LeaseRecord& l) {
  JsonArena arena;  // the tree below dies before it
  Json json = Json::object();
  json.add("name", l.name);
  json.add("holder", l.holder);
  json.add("host", l.host);
  if (!l.host_id.empty()) json.add("host_id", l.host_id);
  // Integers printed as digits: cJSON would print a double through %g.
  if (l.pid != 0) json.add_raw("pid", std::to_string(l.pid));
  if (l.pid_start != 0) json.add_raw("pid_start", std::to_string(l.pid_start));
  if (l.token != 0) json.add_raw("token", std::to_string(l.token));
  json.add_raw("ttl_ms", std::to_string(l.ttl.count()));
  if (l.acquired_at) json.add("acquired_at", record::time_text(*l.acquired_at, l.acquired_at_text));
  if (l.renewed_at) json.add("renewed_at", record::time_text(*l.renewed_at, l.renewed_at_text));
  json.add_raw("transitions", std::to_string(l.transitions));
  if (!l.slot.empty()) json.add("slot", l.slot);
  if (!l.task.empty()) json.add("task", l.task);
  if (l.order != 0) json.add_raw("order", std::to_string(l.order));
  record::add_unknown(json, l.unknown_fields, is_known);
  return json.dump();
}

}  // namespace swarm
