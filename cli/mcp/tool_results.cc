#include "cli/mcp/tool_results.h"

#include "cli/mcp/protocol.h"
#include "cli/verbs/exit_code.h"
#include "swarm/base/duration.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

using mcp::member;

// Each line of `text`, in order.
template <typename F>
void each_line(const std::string& text, F&& f) {
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = text.find('\n', at);
    f(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
}

// The JSON lines of `text` (the others dropped).
std::vector<swarm::Json> json_lines(const std::string& text) {
  std::vector<swarm::Json> out;
  each_line(text, [&](const std::string& line) {
    if (line.empty() || line.front() != '{') return;
    if (auto j = swarm::Json::parse(line)) out.push_back(std::move(j));
  });
  return out;
}

// The lines of `text` that are not JSON (warnings and notes of stderr).
std::string text_lines(const std::string& text) {
  std::string out;
  each_line(text, [&](const std::string& line) {
    if (!line.empty() && line.front() != '{') out += line + "\n";
  });
  return out;
}

// The handle a join or a lease's grant returns: its token, its lifetime
// and how to keep it.
swarm::Json handle_of(const Tool& tool, const swarm::Json& doc, const TtlNow& ttl_now) {
  swarm::Json h = swarm::Json::object();
  if (tool.words.front() == "join") {  // join, task_next
    const cJSON* token = member(doc.get(), "session_token");
    const cJSON* slot = member(doc.get(), "slot");
    const std::chrono::milliseconds ttl = ttl_now();  // of now: `up --ttl` changes it in place
    const auto every = std::chrono::duration_cast<std::chrono::seconds>(ttl / 3);
    h.set("kind", "session").set("token", token ? swarm::Json::copy(token) : swarm::Json())
        .set("slot", cJSON_IsString(slot) ? slot->valuestring : "")
        .set("ttl_seconds", static_cast<double>(ttl.count()) / 1000.0)
        .set("keep", "pass it as session to commit, sync, renew, hold, close and land; call renew at least every " +
                         swarm::format_duration(every) + " (commit and sync renew too). Once another session "
                         "replaces it, every call with it is an error: join again");
    return h;
  }
  const cJSON* leases = member(doc.get(), "leases");
  const cJSON* lease = cJSON_GetArrayItem(leases, 0);
  const cJSON* ttl_ms = member(lease, "ttl_ms");
  h.set("kind", "fencing").set("lease", cJSON_IsString(member(lease, "name")) ? member(lease, "name")->valuestring : "")
      .set("token", member(lease, "token") ? swarm::Json::copy(member(lease, "token")) : swarm::Json())
      .set("ttl_seconds", cJSON_IsNumber(ttl_ms) ? ttl_ms->valuedouble / 1000.0 : 0.0)
      .set("keep", "call lease_renew with name and token before the TTL ends, lease_release when done; pass the "
                   "token to whatever you write so a stale holder's writes can be refused");
  return h;
}

// swarm's own error among what a failed run wrote: the last line of its
// stderr, and only that (a line a command or a check printed before it
// is theirs, never taken for swarm's); made up when there is none.
swarm::Json error_of_run(const Ran& ran, const std::string& warnings) {
  std::string last = ran.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  if (auto j = swarm::Json::parse(last))
    if (const cJSON* s = member(j.get(), "schema"); cJSON_IsString(s) && std::string(s->valuestring) == "swarm.error.v1") {
      cJSON_DeleteItemFromObject(j.get(), "exit");
      j.set("exit", ran.exit);
      return j;
    }
  return exit_error(ran.exit, warnings.empty() ? "" : swarm::printable(warnings));
}

}  // namespace

void CollectingReporter::warn(const std::string& message) {
  std::lock_guard lock(mu_);
  said_ += "swarm: warning: " + swarm::printable(message, true) + "\n";
}

void CollectingReporter::note(const std::string& message) {
  std::lock_guard lock(mu_);
  said_ += "swarm: " + swarm::printable(message, true) + "\n";
}

bool CollectingReporter::item(const swarm::Json& doc, const std::string&) {
  std::lock_guard lock(mu_);
  items_.push_back(swarm::Json::copy(doc.get()));
  return true;
}

std::string CollectingReporter::said() const {
  std::lock_guard lock(mu_);
  return said_;
}

swarm::Json CollectingReporter::items_document() {
  std::lock_guard lock(mu_);
  swarm::Json doc = swarm::Json::object();
  swarm::Json items = swarm::Json::array();
  for (auto& i : items_) items.push(std::move(i));
  items_.clear();
  doc.set("items", std::move(items));
  return doc;
}

swarm::Json success_result(const Tool& tool, swarm::Json doc, const std::string& warnings, const TtlNow& ttl) {
  if (tool.handle) doc.set("handle", handle_of(tool, doc, ttl));
  swarm::Json content = swarm::Json::array();
  swarm::Json item = swarm::Json::object();
  item.set("type", "text").set("text", doc.dump() + (warnings.empty() ? "" : "\n" + warnings));
  content.push(std::move(item));
  swarm::Json r = swarm::Json::object();
  r.set("content", std::move(content)).set("structuredContent", std::move(doc)).set("isError", false);
  return r;
}

swarm::Json error_result(swarm::Errc kind, const std::string& message, swarm::Json doc) {
  swarm::Json error = swarm::Json::object();
  error.set("schema", "swarm.error.v1").set("kind", swarm::to_string(kind)).set("message", swarm::printable(message))
      .set("exit", exit_code_for(kind));
  return error_result_of(std::move(error), std::move(doc));
}

swarm::Json exit_error(int exit, const std::string& message) {
  swarm::Json error = swarm::Json::object();
  error.set("schema", "swarm.error.v1").set("kind", "internal")
      .set("message", message.empty() ? "exit " + std::to_string(exit) : message).set("exit", exit);
  return error;
}

swarm::Json error_result_of(swarm::Json error, swarm::Json doc) {
  std::string text = "error: ";
  if (const cJSON* m = member(error.get(), "message"); cJSON_IsString(m)) text += m->valuestring;
  if (doc) error.set("result", std::move(doc));
  swarm::Json content = swarm::Json::array();
  swarm::Json item = swarm::Json::object();
  item.set("type", "text").set("text", text);
  content.push(std::move(item));
  swarm::Json r = swarm::Json::object();
  r.set("content", std::move(content)).set("structuredContent", std::move(error)).set("isError", true);
  return r;
}

swarm::Json result_of_run(const Tool& tool, const Ran& ran, const TtlNow& ttl) {
  // The document: one JSON object on stdout, or JSON Lines as items.
  swarm::Json doc;
  if (tool.lines) {
    doc = swarm::Json::object();
    swarm::Json items = swarm::Json::array();
    for (auto& j : json_lines(ran.out)) items.push(std::move(j));
    doc.set("items", std::move(items));
  } else {
    auto docs = json_lines(ran.out);
    if (!docs.empty()) doc = std::move(docs.back());
  }
  const std::string warnings = text_lines(ran.err);
  if (ran.exit != 0) return error_result_of(error_of_run(ran, warnings), std::move(doc));
  if (!doc) {
    doc = swarm::Json::object();
    doc.set("schema", "swarm." + tool.words.front() + ".v1").set("text", ran.out);
  }
  return success_result(tool, std::move(doc), warnings, ttl);
}

}  // namespace cli
