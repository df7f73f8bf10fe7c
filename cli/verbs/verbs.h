// The verbs of this layer, each defined in its own file (cli/verbs/<verb>.cc)
// and listed once by typed_verbs() (verb.cc).
#pragma once

#include "cli/verbs/verb.h"

namespace cli {

VerbSpec renew_verb();   // renew.cc
VerbSpec status_verb();  // status.cc
VerbSpec send_verb();    // messages.cc
VerbSpec inbox_verb();   // messages.cc
VerbSpec ack_verb();     // messages.cc
VerbSpec ask_verb();     // messages.cc
VerbSpec hold_verb();    // holds.cc
VerbSpec holds_verb();   // holds.cc
VerbSpec evict_verb();   // slot_records.cc
VerbSpec cwd_verb();     // slot_records.cc
VerbSpec commit_verb();  // commit.cc
VerbSpec sync_verb();    // sync.cc
VerbSpec close_verb();   // close.cc
VerbSpec log_verb();     // log.cc
VerbSpec doctor_verb();  // doctor.cc
VerbSpec branches_verb();  // branches.cc
VerbSpec lease_show_verb();  // leases.cc
VerbSpec lease_list_verb();  // leases.cc
VerbSpec task_list_verb();  // tasks.cc
VerbSpec task_show_verb();  // tasks.cc
VerbSpec task_add_verb();     // task_changes.cc
VerbSpec task_edit_verb();    // task_changes.cc
VerbSpec task_cancel_verb();  // task_changes.cc
VerbSpec task_reopen_verb();  // task_changes.cc
VerbSpec review_approve_verb();  // review.cc
VerbSpec review_reject_verb();   // review.cc
VerbSpec review_show_verb();     // review.cc
VerbSpec lease_renew_verb();     // lease_changes.cc
VerbSpec lease_release_verb();   // lease_changes.cc
VerbSpec lease_limit_verb();     // lease_changes.cc
VerbSpec join_verb();            // join.cc
VerbSpec task_export_verb();     // task_files.cc
VerbSpec task_import_verb();     // task_files.cc

// The slot a verb acts on, resolved where the request is made: `given`, or
// the slot whose worktree holds the caller's folder (Context::slot_of).
void resolve_slot(std::string& slot, const Context& ctx);

// The positional NAME of a lease verb, a lease name (leases.cc).
OptionSpec lease_name_option(std::string help);

// --onto BRANCH, a branch name (branches.cc; land's too).
OptionSpec onto_option(std::string help);

}  // namespace cli
