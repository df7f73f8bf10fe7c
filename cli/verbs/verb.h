// A verb below every front end: its options as one table, a typed request
// made from them (validated once, exit 2 before any I/O), one function that
// does it, and one result its swarm.<verb>.v1 document and its text come
// from. The command line binds the table to CLI11; MCP and the agent's
// socket read the request from JSON by the same table (adr/0056).
#pragma once

#include <cJSON.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/verbs/context.h"
#include "swarm/base/json.h"

namespace cli {

// One option (or positional) of a verb, as every front end takes it.
struct OptionSpec {
  enum class Kind { flag, text, texts, number };
  std::string name;  // "--status", "-n", or a positional's name ("pattern")
  std::string alias;  // a short name the command line also takes ("-m" of "--message")
  Kind kind = Kind::text;
  std::string value_name;  // STATUS, in help and errors
  std::string help;
  std::string env;  // the command line reads it from this variable when not given
  std::vector<std::string> choices;
  std::int64_t min = 0, max = 0;  // a number's range
  bool required = false;
  bool token = false;  // a text that a tool takes as a whole number (a session token)
  // Set by the verb's resolve where the request is made (from the caller's
  // folder), never given: no option of the command line, no argument of a
  // tool; the socket carries it to the run.
  bool resolved = false;
  // Throws bad_input naming the value (run on each value, and on each of a list's).
  std::function<void(const std::string&)> check;
  bool positional() const { return !name.empty() && name.front() != '-'; }
  // As a tool's argument and the socket's request name it: no dashes, '-' as '_'.
  std::string key() const;
};

// A value as the table moves it between a request and a front end: the
// member of its option's kind.
struct OptionValue {
  bool flag = false;
  std::string text;
  std::vector<std::string> texts;
  std::int64_t number = 0;
};

// One option bound to a field of its request (type-erased: `request` is the verb's R).
struct BoundOption {
  OptionSpec spec;
  std::function<void(void* request, const OptionValue& value)> set;
  // nullopt: not given (an empty text, a false flag, an empty list, 0, an empty optional).
  std::function<std::optional<OptionValue>(const void* request)> get;
};

// What a verb gives back: its document (without "schema", which the
// front end adds as swarm.<verb>.v1), its text for people, its exit code.
struct VerbResult {
  std::string verb;  // the schema's name
  swarm::Json doc = swarm::Json::object();
  std::string text;
  // The document already rendered, its schema in it: for one too large to
  // build twice (status of many sessions). Used instead of `doc`.
  std::string rendered;
  // The text is escaped already (a table with its colours): printed as it is.
  bool text_is_safe = false;
  int exit = 0;
  // Nothing at the end: a verb of items (inbox) said everything as it went.
  bool items_only = false;
};

// What a verb says while it runs, besides its result: on the command line
// stderr (and stdout for items), over MCP progress, over the socket frames.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void warn(const std::string& message) = 0;
  virtual void note(const std::string& message) = 0;
  // One item of a verb that lists as it goes: its JSON line and its text
  // line. False: it did not reach the caller (nothing after it is acked).
  virtual bool item(const swarm::Json& doc, const std::string& line) = 0;
};

// A verb as the front ends see it.
struct VerbSpec {
  std::vector<std::string> words;  // {"renew"}, {"task", "list"}
  std::string summary;
  std::string footer;  // the examples and notes of --help
  std::vector<BoundOption> options;
  bool items = false;  // its result is a list of items (MCP: {"items":[...]})
  // Whether this request reads the caller's standard input (send -): the
  // socket carries it along.
  std::function<bool(const void* request)> reads_input = [](const void*) { return false; };
  std::function<std::shared_ptr<void>()> make;  // a request with every default
  // Checks that span options: bad_input before any I/O.
  std::function<void(const void* request)> validate;
  // Where the request is made (the caller's process): what comes of the
  // caller's folder and environment (the slot of its worktree), so that a
  // request sent elsewhere means the same.
  std::function<void(void* request, const Context& ctx)> resolve;
  std::function<VerbResult(const void* request, Context& ctx, Reporter& report)> run;
  std::string name() const;  // "renew", "task_list"
};

// The table of a verb whose request is R, built option by option.
template <class R>
class OptionTable {
 public:
  OptionTable& text(std::string R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::text;
    return add(std::move(spec), [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.text; },
               [field](const void* r) -> std::optional<OptionValue> {
                 const auto& v = static_cast<const R*>(r)->*field;
                 if (v.empty()) return std::nullopt;
                 return OptionValue{.text = v};
               });
  }
  // A text whose absence differs from '' (renew --note '' clears the note).
  OptionTable& maybe_text(std::optional<std::string> R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::text;
    return add(std::move(spec), [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.text; },
               [field](const void* r) -> std::optional<OptionValue> {
                 const auto& v = static_cast<const R*>(r)->*field;
                 if (!v) return std::nullopt;
                 return OptionValue{.text = *v};
               });
  }
  OptionTable& flag(bool R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::flag;
    return add(std::move(spec), [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.flag; },
               [field](const void* r) -> std::optional<OptionValue> {
                 if (!(static_cast<const R*>(r)->*field)) return std::nullopt;
                 return OptionValue{.flag = true};
               });
  }
  OptionTable& texts(std::vector<std::string> R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::texts;
    return add(std::move(spec),
               [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.texts; },
               [field](const void* r) -> std::optional<OptionValue> {
                 const auto& v = static_cast<const R*>(r)->*field;
                 if (v.empty()) return std::nullopt;
                 return OptionValue{.texts = v};
               });
  }
  OptionTable& number(std::int64_t R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::number;
    return add(std::move(spec), [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.number; },
               [field](const void* r) -> std::optional<OptionValue> {
                 const auto v = static_cast<const R*>(r)->*field;
                 if (v == 0) return std::nullopt;
                 return OptionValue{.number = v};
               });
  }
  // A number whose absence differs from 0 (log -n 0 with --follow).
  OptionTable& maybe_number(std::optional<std::int64_t> R::*field, OptionSpec spec) {
    spec.kind = OptionSpec::Kind::number;
    return add(std::move(spec), [field](void* r, const OptionValue& v) { static_cast<R*>(r)->*field = v.number; },
               [field](const void* r) -> std::optional<OptionValue> {
                 const auto& v = static_cast<const R*>(r)->*field;
                 if (!v) return std::nullopt;
                 return OptionValue{.number = *v};
               });
  }
  std::vector<BoundOption> done() { return std::move(options_); }

 private:
  template <class Set, class Get>
  OptionTable& add(OptionSpec spec, Set set, Get get) {
    options_.push_back({std::move(spec), std::move(set), std::move(get)});
    return *this;
  }
  std::vector<BoundOption> options_;
};

// The VerbSpec of a request type R and its functions.
template <class R>
VerbSpec make_verb(std::vector<std::string> words, std::string summary, std::string footer,
                   std::vector<BoundOption> options, std::function<void(const R&)> validate,
                   std::function<void(R&, const Context&)> resolve,
                   std::function<VerbResult(const R&, Context&, Reporter&)> run) {
  VerbSpec v;
  v.words = std::move(words);
  v.summary = std::move(summary);
  v.footer = std::move(footer);
  v.options = std::move(options);
  v.make = [] { return std::static_pointer_cast<void>(std::make_shared<R>()); };
  v.validate = [validate](const void* r) {
    if (validate) validate(*static_cast<const R*>(r));
  };
  v.resolve = [resolve](void* r, const Context& ctx) {
    if (resolve) resolve(*static_cast<R*>(r), ctx);
  };
  v.run = [run](const void* r, Context& ctx, Reporter& report) { return run(*static_cast<const R*>(r), ctx, report); };
  return v;
}

// The common options, as every verb that acts on one slot takes them.
OptionSpec slot_option(std::string help = "Slot name");
OptionSpec session_option();
// A task id (`name` a positional such as "id", or "--task") and a task
// label (repeatable), each value checked as the queue checks it.
OptionSpec task_id_option(std::string name, std::string value_name, std::string help, bool required = false);
OptionSpec task_label_option(std::string help);

// Every verb of this layer, in the order `swarm --help` lists them.
const std::vector<VerbSpec>& typed_verbs();
// The verb of these words (nullptr: none of this layer's).
const VerbSpec* typed_verb(const std::vector<std::string>& words);
const VerbSpec* typed_verb_named(const std::string& name);  // "task_list"

// A request read from JSON (a tool's arguments, the socket's request):
// each key an option's key, typed as the table says; each value checked
// as the command line checks it, then the verb's own checks. bad_input
// naming the argument otherwise. `who` names the caller's verb in errors.
// The options a resolve sets are read only `with_resolved` (the socket's:
// its client resolved them); a tool's call has none.
std::shared_ptr<void> request_from_json(const VerbSpec& verb, const cJSON* arguments, const std::string& who,
                                        bool with_resolved = false);
// The request as JSON, keys as request_from_json reads them (what is not
// given left out).
swarm::Json request_json(const VerbSpec& verb, const void* request);

// Runs the verb on a request already checked; a thrown error stays thrown.
VerbResult run_verb(const VerbSpec& verb, const void* request, Context& ctx, Reporter& report);

// The document of a result, its schema first: `rendered`, or `doc` as
// swarm.<verb>.v1 (one line, no newline).
std::string document_text(const VerbResult& result);
// The result as the command line prints it: its document (--json) or its
// text on stdout; its exit code.
int print_result(const Output& out, const VerbResult& result);

// What a verb says, as the command line shows it: warnings and notes on
// stderr, items on stdout (JSON Lines with --json) as they come.
class PrintingReporter : public Reporter {
 public:
  explicit PrintingReporter(const Output& out) : out_(out) {}
  void warn(const std::string& message) override;
  void note(const std::string& message) override;
  bool item(const swarm::Json& doc, const std::string& line) override;

 private:
  const Output& out_;
};

}  // namespace cli
