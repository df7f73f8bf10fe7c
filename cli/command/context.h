// The global options of every verb, and what verbs build from them: the
// workspace, the NATS connection, the session store, the slot lifecycle.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/verbs/context.h"
#include "cli/verbs/output.h"
#include "kv/connection.h"
#include "kv/nats_context.h"
#include "swarm/base/safe_dir.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/bus.h"
#include "swarm/bus/cursors.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/lease.h"
#include "swarm/slots/lifecycle.h"
#include "swarm/workspace/workspace.h"

namespace cli {

// Runs a check that throws and hands its message to CLI11 ("" means
// valid), so bad values stop the parse before any I/O (exit 2).
template <typename Require>
CLI::Validator validator_of(Require require, const char* name) {
  return CLI::Validator(
      [require](std::string& value) -> std::string {
        try {
          require(value);
        } catch (const std::exception& e) {
          return e.what();
        }
        return {};
      },
      "", name);
}

// A whole number from `min` to `max`, written in decimal digits (a '-'
// only where `min` is negative; leading zeros dropped, since CLI11 would
// read 010 as octal): exit 2 naming the value otherwise.
CLI::Validator decimal_in(std::int64_t min, std::int64_t max);

// A fencing token: decimal digits, not 0 (exit 2 naming the value otherwise).
CLI::Validator fencing_token_validator();

// Option validators that refuse bad names at parse time, before any I/O (exit 2).
CLI::Validator slot_name_validator();
CLI::Validator task_id_validator();
CLI::Validator duration_validator();

// --slot SLOT (or $SWARM_SLOT) on the verbs that act on one slot: not
// required, since inside a slot's worktree the slot is the worktree's (see
// Context::slot_of). `help` says what it is. Returns the option.
CLI::Option* add_slot_option(CLI::App& cmd, std::string& slot, const std::string& help = "Slot name");

// --session TOKEN (or $SWARM_SESSION) on the verbs that act on a slot: the
// session token join gave the agent. Returns the option.
CLI::Option* add_session_option(CLI::App& cmd, std::string& session);

// Registers the global options on the top-level app; with fallthrough they
// are accepted before or after the verb.
void add_global_options(CLI::App& app, Globals& globals);

// A verb: its subcommand and what runs when it was the one parsed.
struct Verb {
  CLI::App* command = nullptr;
  std::function<int(Context&)> run;
};


Verb add_up(CLI::App& app);
Verb add_down(CLI::App& app);
Verb add_version(CLI::App& app);
Verb add_join(CLI::App& app);
Verb add_commit(CLI::App& app);
Verb add_renew(CLI::App& app);
Verb add_close(CLI::App& app);
Verb add_evict(CLI::App& app);
Verb add_status(CLI::App& app);
Verb add_cwd(CLI::App& app);
Verb add_doctor(CLI::App& app);
Verb add_lease(CLI::App& app);
Verb add_lock(CLI::App& app);
Verb add_elect(CLI::App& app);
Verb add_log(CLI::App& app);
Verb add_branches(CLI::App& app);
Verb add_land(CLI::App& app);
Verb add_sync(CLI::App& app);
// swarm: hands over to swarm-serve; swarm-serve: the server (cli/serve.h).
Verb add_serve(CLI::App& app);
// Hidden: what `commit` starts in the background when the hub has too many packs.
Verb add_repack_hub(CLI::App& app);
Verb add_complete(CLI::App& app);
Verb add_completion(CLI::App& app);
Verb add_recovery(CLI::App& app);
Verb add_help(CLI::App& app);
Verb add_run(CLI::App& app);
Verb add_task(CLI::App& app);
Verb add_review(CLI::App& app);

Verb add_send(CLI::App& app);
Verb add_inbox(CLI::App& app);
Verb add_ack(CLI::App& app);
Verb add_ask(CLI::App& app);
Verb add_blob(CLI::App& app);
Verb add_hold(CLI::App& app);
Verb add_mcp(CLI::App& app);
Verb add_holds(CLI::App& app);
// The help topics (the pages of docs/), by name, comma-separated.
std::string topic_list();
// What `swarm help WORDS...` prints: the verb's --help, or a topic's page;
// nullopt when the words name neither.
std::optional<std::string> help_text(const CLI::App& root, const std::vector<std::string>& words);
// The values an option takes when it takes one of a set (its validator's
// "{a,b,c}"); empty otherwise.
std::vector<std::string> enumerated_values(const CLI::Option* option);
// The verbs (or sub-verbs) of `app` a user sees: hidden ones left out.
std::vector<const CLI::App*> verbs_of(const CLI::App& app);

}  // namespace cli
