#include "cli/verbs/verb.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "cli/verbs/agent_door.h"
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/tasks/task.h"

namespace cli {

std::string OptionSpec::key() const {
  std::string out = name.substr(name.find_first_not_of('-'));
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::string VerbSpec::name() const {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : "_") + w;
  return out;
}

OptionSpec slot_option(std::string help) {
  return {.name = "--slot",
          .value_name = "SLOT",
          .help = std::move(help) + " (default: $SWARM_SLOT, else the slot whose worktree holds the current folder)",
          .env = "SWARM_SLOT",
          .check = swarm::require_slot_name};
}

OptionSpec session_option() {
  return {.name = "--session",
          .value_name = "TOKEN",
          .help = "Act only while the slot's session is this one (the session_token join printed); a replaced agent "
                  "gets exit 3 and changes nothing",
          .env = "SWARM_SESSION",
          .token = true,
          .check = [](const std::string& text) {
            if (text.empty() || text.size() > 16 || text.find_first_not_of("0123456789") != std::string::npos ||
                std::stoull(text) == 0)
              throw swarm::Error(swarm::Errc::bad_input, "bad session token '" + swarm::printable(text) +
                                                             "': a session token is a positive whole number, as "
                                                             "`swarm join --json` prints it");
          }};
}

OptionSpec task_id_option(std::string name, std::string value_name, std::string help, bool required) {
  return {.name = std::move(name),
          .value_name = std::move(value_name),
          .help = std::move(help),
          .required = required,
          .check = [](const std::string& id) { swarm::require_task_id(id); }};
}

OptionSpec task_label_option(std::string help) {
  return {.name = "--label",
          .value_name = "L",
          .help = std::move(help),
          .check = [](const std::string& l) { swarm::require_task_label(l); }};
}

const std::vector<VerbSpec>& typed_verbs() {
  static const std::vector<VerbSpec> verbs = {join_verb(), commit_verb(), renew_verb(), close_verb(), evict_verb(),
                                              status_verb(), cwd_verb(),   send_verb(),  inbox_verb(),
                                              ack_verb(),    ask_verb(),   hold_verb(),  holds_verb(),
                                              sync_verb(),   log_verb(),   doctor_verb(), branches_verb(),
                                              lease_show_verb(), lease_list_verb(), task_list_verb(), task_show_verb(),
                                              task_add_verb(), task_edit_verb(), task_cancel_verb(),
                                              task_reopen_verb(), review_approve_verb(), review_reject_verb(),
                                              review_show_verb(), lease_renew_verb(), lease_release_verb(),
                                              lease_limit_verb(), task_export_verb(), task_import_verb()};
  return verbs;
}

const VerbSpec* typed_verb(const std::vector<std::string>& words) {
  for (const auto& v : typed_verbs())
    if (v.words == words) return &v;
  return nullptr;
}

const VerbSpec* typed_verb_named(const std::string& name) {
  for (const auto& v : typed_verbs())
    if (v.name() == name) return &v;
  return nullptr;
}

namespace {

// A value of `spec` from JSON, typed as the table says.
OptionValue value_of(const OptionSpec& spec, const cJSON* item, const std::function<void(const std::string&)>& bad) {
  auto checked = [&](const std::string& text) {
    if (spec.check) spec.check(text);
    if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end())
    {
      std::string all;
      for (const auto& c : spec.choices) all += (all.empty() ? "" : ", ") + c;
      bad("is none of " + all);
    }
    return text;
  };
  auto whole = [&]() -> std::int64_t {
    if (!cJSON_IsNumber(item) || item->valuedouble != std::floor(item->valuedouble) ||
        std::fabs(item->valuedouble) > 9.0e15)
      bad("is not a whole number");
    return static_cast<std::int64_t>(item->valuedouble);
  };
  switch (spec.kind) {
    case OptionSpec::Kind::flag:
      if (!cJSON_IsBool(item)) bad("is not true or false");
      return {.flag = cJSON_IsTrue(item) != 0};
    case OptionSpec::Kind::number: {
      const std::int64_t n = whole();
      if (n < spec.min || n > spec.max)
        bad("is out of range: " + std::to_string(spec.min) + " to " + std::to_string(spec.max));
      return {.number = n};
    }
    case OptionSpec::Kind::text:
      if (spec.token && cJSON_IsNumber(item)) return {.text = checked(std::to_string(whole()))};
      if (!cJSON_IsString(item)) bad("is not a string");
      return {.text = checked(item->valuestring)};
    case OptionSpec::Kind::texts: {
      if (!cJSON_IsArray(item)) bad("is not a list of strings");
      OptionValue out;
      for (const cJSON* e = item->child; e != nullptr; e = e->next) {
        if (!cJSON_IsString(e)) bad("is not a list of strings");
        out.texts.push_back(checked(e->valuestring));
      }
      return out;
    }
  }
  return {};
}

}  // namespace

std::shared_ptr<void> request_from_json(const VerbSpec& verb, const cJSON* arguments, const std::string& who,
                                        bool with_resolved) {
  if (arguments != nullptr && !cJSON_IsNull(arguments) && !cJSON_IsObject(arguments))
    throw swarm::Error(swarm::Errc::bad_input, "the arguments of " + who + " are not an object");
  std::shared_ptr<void> request = verb.make();
  std::vector<std::string> given;
  for (const cJSON* item = arguments ? arguments->child : nullptr; item != nullptr; item = item->next) {
    const std::string key = item->string ? item->string : "";
    auto bad = [&](const std::string& why) {
      throw swarm::Error(swarm::Errc::bad_input, "argument '" + swarm::printable(key) + "' of " + who + " " + why);
    };
    const auto it = std::find_if(verb.options.begin(), verb.options.end(),
                                 [&](const BoundOption& o) { return o.spec.key() == key; });
    if (it == verb.options.end() || (it->spec.resolved && !with_resolved)) bad("is none of its arguments");
    if (std::find(given.begin(), given.end(), key) != given.end()) bad("is given twice");
    given.push_back(key);
    if (cJSON_IsNull(item)) continue;  // as if not given
    it->set(request.get(), value_of(it->spec, item, bad));
  }
  for (const auto& o : verb.options)
    if (o.spec.required && !o.get(request.get()))
      throw swarm::Error(swarm::Errc::bad_input, "argument '" + o.spec.key() + "' of " + who + " is required");
  verb.validate(request.get());
  return request;
}

swarm::Json request_json(const VerbSpec& verb, const void* request) {
  swarm::Json out = swarm::Json::object();
  for (const auto& o : verb.options) {
    const auto value = o.get(request);
    if (!value) continue;
    const std::string key = o.spec.key();
    switch (o.spec.kind) {
      case OptionSpec::Kind::flag: out.set(key.c_str(), value->flag); break;
      case OptionSpec::Kind::text: out.set(key.c_str(), value->text); break;
      case OptionSpec::Kind::texts: out.set(key.c_str(), swarm::Json::strings(value->texts)); break;
      case OptionSpec::Kind::number: out.set(key.c_str(), value->number); break;
    }
  }
  return out;
}

VerbResult run_verb(const VerbSpec& verb, const void* request, Context& ctx, Reporter& report) {
  VerbResult result = verb.run(request, ctx, report);
  if (result.verb.empty()) result.verb = verb.words.front();
  return result;
}

std::string document_text(const VerbResult& result) {
  if (!result.rendered.empty()) return result.rendered;
  return with_schema(result.verb, swarm::Json::copy(result.doc.get())).dump();
}

int print_result(const Output& out, const VerbResult& result) {
  if (result.items_only) return result.exit;
  if (out.json()) out.rendered(document_text(result));
  else if (result.text_is_safe) out.rendered(result.text);
  else out.result(result.verb, result.text, swarm::Json::object());
  return result.exit;
}

void PrintingReporter::warn(const std::string& message) { out_.warn(message); }
void PrintingReporter::note(const std::string& message) { out_.note(message); }

bool PrintingReporter::item(const swarm::Json& doc, const std::string& line) {
  if (out_.json()) std::cout << doc.dump() << '\n';
  else std::cout << line;
  std::cout.flush();
  return static_cast<bool>(std::cout);
}

namespace {
DoorOpener& door_opener() {
  static DoorOpener opener;
  return opener;
}
}  // namespace

void set_door_opener(DoorOpener opener) { door_opener() = std::move(opener); }

std::unique_ptr<AgentDoor> open_agent_door(const Globals& globals) {
  return door_opener() ? door_opener()(globals) : nullptr;
}

}  // namespace cli
