// swarm.status.v1: the sessions as `status --json`, /api/status and the
// status tool hand them out, written one session at a time (no tree of
// all of them): at 100,000 sessions memory stays flat.
#include "cli/verbs/documents/documents.h"
#include <cJSON.h>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include "swarm/base/text.h"
#include "swarm/base/json.h"

namespace cli {

namespace {

// A number as cJSON prints it (a whole one as digits, else %1.15g, or
// %1.17g when that does not read back the same), printed by cJSON itself
// into a buffer: no allocation, and no second copy of its rules.
void append_number(std::string& out, double value) {
  thread_local cJSON number{};
  number.type = cJSON_Number;
  number.valuedouble = value;
  number.valueint = value >= INT_MAX ? INT_MAX : value <= INT_MIN ? INT_MIN : static_cast<int>(value);
  char text[64];
  if (!cJSON_PrintPreallocated(&number, text, sizeof text, false)) {
    out += "null";
    return;
  }
  out += text;
}

void append_digits(std::string& out, std::uint64_t value) {
  char number[24];
  out.append(number, static_cast<std::size_t>(std::to_chars(number, number + sizeof number, value).ptr - number));
}

// Milliseconds as seconds, the text cJSON prints for `millis / 1000.0`
// ("22", "22.7", "22.704", "-0.5"): below 10^12 ms, %1.15g of that double
// is the exact decimal, so it is written from the integer (cJSON's printf
// and the sscanf it checks with cost ~3 us a row at 10,000 rows).
void append_seconds(std::string& out, std::int64_t millis) {
  constexpr std::int64_t kExactBelow = 1'000'000'000'000;
  if (millis <= -kExactBelow || millis >= kExactBelow) {
    append_number(out, static_cast<double>(millis) / 1000.0);
    return;
  }
  if (millis < 0) out += '-';
  const std::uint64_t magnitude = static_cast<std::uint64_t>(millis < 0 ? -millis : millis);
  append_digits(out, magnitude / 1000);
  std::uint64_t fraction = magnitude % 1000;
  if (fraction == 0) return;
  char digits[4] = {static_cast<char>('0' + fraction / 100), static_cast<char>('0' + fraction / 10 % 10),
                    static_cast<char>('0' + fraction % 10), 0};
  std::size_t n = 3;
  while (digits[n - 1] == '0') --n;
  out += '.';
  out.append(digits, n);
}

// The names status always adds to a record's row; a newer writer's field of
// one of these names gives way to status's own (session_token and
// task_lease only when status writes them: see status_fields_of).
constexpr std::array<const char*, 5> kStatusFields = {"revision", "state", "age_seconds", "local", "task_state"};

// The start of one session's object in swarm.status.v1, without its closing
// brace: the record's own JSON as swarm writes it; a record with fields of a
// newer writer goes through cJSON (their values in cJSON's form, {"a": 1.0}
// as {"a":1}, as status always printed them); a corrupt one is its slot.
void append_record_part(std::string& out, const swarm::SessionRow& row) {
  if (row.corrupt) {
    out += "{\"slot\":";
    swarm::append_quoted(out, row.slot);
    return;
  }
  if (!row.newer_fields) {
    out += row.record_json;
    out.pop_back();  // its closing brace
    return;
  }
  swarm::Json tree = swarm::Json::parse(std::string(row.record_json));
  for (const char* name : kStatusFields) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), name);
  if (!row.token_in_record) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), "session_token");
  if (!row.task_lease_problem.empty()) cJSON_DeleteItemFromObjectCaseSensitive(tree.get(), "task_lease");
  std::string text = tree.dump();
  text.pop_back();
  out += text;
}

// One session as swarm.status.v1 has it: the record's fields, then status's,
// written once, as it goes, without a tree of the whole row.
void append_row_json(std::string& out, const swarm::SessionRow& row) {
  append_record_part(out, row);
  if (!row.corrupt && !row.token_in_record) {
    out += ",\"session_token\":";
    append_digits(out, row.session_token);
  }
  out += ",\"revision\":";
  append_digits(out, row.revision);
  out += ",\"state\":\"";
  out += swarm::to_string(row.state);
  out += "\",\"age_seconds\":";
  append_seconds(out, static_cast<std::int64_t>(row.age.count()));
  out += row.local ? ",\"local\":true" : ",\"local\":false";
  if (!row.task_state.empty()) {
    out += ",\"task_state\":\"";
    out += row.task_state;
    out += '"';
  }
  if (row.corrupt) {
    out += ",\"error\":";
    swarm::append_quoted(out, row.corrupt_reason);
  }
  if (!row.task_lease_problem.empty()) {
    out += ",\"task_lease\":{\"name\":";
    swarm::append_quoted(out, swarm::task_lease_name(std::string(row.task_id)));
    out += ",\"problem\":";
    swarm::append_quoted(out, row.task_lease_problem);
    out += '}';
  }
  out += '}';
}


}  // namespace

// swarm.status.v1, written one session at a time (no tree of all of them),
// to `out` in pieces of about 64 KiB: memory stays flat however many there are.
// A watch adds "change": null on its first line, then the change of each line.
void write_status_json(std::ostream& out, const std::string& bucket, std::chrono::milliseconds ttl,
                       const std::vector<swarm::SessionRow>& rows, bool watching, const swarm::Json* change) {
  swarm::Json head = swarm::Json::object();
  head.set("schema", "swarm.status.v1")
      .set("bucket", bucket)
      .set("ttl_seconds", static_cast<double>(ttl.count()) / 1000.0);
  std::string text = head.dump();
  text.pop_back();  // reopen the object
  text += ",\"sessions\":[";
  constexpr std::size_t kPiece = 64 * 1024;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0) text += ',';
    append_row_json(text, rows[i]);
    if (text.size() >= kPiece) {
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  text += "]";
  if (watching) text += ",\"change\":" + (change ? change->dump() : std::string("null"));
  text += "}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
}

std::string status_json(const std::string& bucket, std::chrono::milliseconds ttl,
                        const std::vector<swarm::SessionRow>& rows, bool watching, const swarm::Json* change) {
  std::ostringstream out;
  write_status_json(out, bucket, ttl, rows, watching, change);
  std::string text = out.str();
  text.pop_back();  // rendered() ends the line
  return text;
}

std::string status_document(const std::string& bucket, std::chrono::milliseconds ttl,
                            const std::vector<swarm::SessionRow>& rows) {
  return status_json(bucket, ttl, rows, false, nullptr);
}

}  // namespace cli
