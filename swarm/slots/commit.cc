// A slot's commit: what it commits (the named paths, or every change), under
// its holds' guard, with the session's provenance in the message, pushed
// to the hub.
#include "swarm/slots/lifecycle.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <future>
#include <sstream>

#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/log.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/base/warnings.h"
#include "swarm/git/hub.h"
#include "swarm/git/worktree.h"
#include "swarm/slots/events.h"
#include "swarm/slots/folder.h"
#include "swarm/slots/liveness.h"

namespace swarm {

namespace fs = std::filesystem;

bool SlotLifecycle::committed_in_this_run(const std::string& slot, const std::optional<Worktree>& worktree) const {
  std::string why;
  auto folder = workspace_.slot_folder(slot);
  std::istringstream in(folder ? folder->read_file(kSessionBaseName, 256, &why).value_or("") : "");
  std::string base;
  if (in >> base) {
    if (worktree) return worktree->branch_tip() != base;
    auto pushed = Hub::open(hub_).branch_tip("swarm/" + slot);  // the worktree is gone: what reached the hub
    return pushed && *pushed != base;
  }
  return worktree ? worktree->has_commits_beyond_default()
                  : Hub::open(hub_).has_commits_beyond_default("swarm/" + slot);
}

std::string with_provenance(const std::string& message, const Session& session, std::uint64_t token) {
  std::string out = message;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  // A last paragraph of "Key: value" lines is a trailer block already:
  // ours join it, as `git interpret-trailers` would; else they start one.
  const auto last_break = out.rfind("\n\n");
  bool in_trailers = last_break != std::string::npos;
  for (std::size_t at = in_trailers ? last_break + 2 : out.size(); in_trailers && at < out.size();) {
    auto end = out.find('\n', at);
    const std::string line = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const auto colon = line.find(": ");
    in_trailers = colon != std::string::npos && colon > 0 &&
                  std::all_of(line.begin(), line.begin() + static_cast<std::ptrdiff_t>(colon), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
                  });
    at = end == std::string::npos ? out.size() : end + 1;
  }
  out += in_trailers ? "\n" : "\n\n";
  out += "Swarm-Slot: " + session.slot + "\nSwarm-Task: " + trailer_value(session.task_id) + "\nSwarm-Session: " +
         std::to_string(token) + "\n";
  return out;
}

CommitResult SlotLifecycle::commit(const std::string& slot, const std::string& message,
                                   const std::vector<std::string>& paths, ExpectedSession session) {
  if (message.empty()) throw Error(Errc::bad_input, "an empty commit message; say what changed with -m");
  require_slot_name(slot);
  // No close or doctor --fix of this host removes the folder while we commit.
  FileLock folder_lock = lock_slot(workspace_, slot, "commit of slot " + slot);
  SessionEntry entry = read_own(slot, session);
  Worktree worktree = open_worktree(slot);
  CommitResult result;
  result.branch = worktree.branch();
  result.token = entry.token();
  result.task_id = entry.session->task_id;
  result.commit = worktree.commit(with_provenance(message, *entry.session, entry.token()), paths,
                                  author_of(*entry.session), holds_guard(entry, result));
  // Also with nothing new to commit, when the hub lacks what the branch has
  // (an earlier push did not get through, plain git commits, a hub branch
  // deleted or moved back).
  try {
    if (result.commit || worktree.hub_lacks_branch()) {
      worktree.push();
      result.pushed = true;
    }
  } catch (const Error& e) {
    result.warnings.push_back(std::string("push failed, the commit stands locally: ") + e.what());
  }
  try {
    result.revision = renew(entry, std::nullopt, &result.warnings);
  } catch (const Error& e) {
    result.warnings.push_back(std::string("renewal failed: ") + e.what());
  }
  // A commit that made nothing and pushed nothing is no act (a renewal).
  if (result.commit || result.pushed)
    journal_.record(commit_event(store_.bucket_name(), entry, result, Actor::here(me_)));
  if (!result.held.empty()) {
    result.warnings.push_back("this commit changes paths other slots hold: " + held_paths_text(result.held) +
                              "; tell them (`swarm send`), or let the workspace refuse such commits with "
                              "`swarm up --holds refuse`");
    journal_.record(hold_conflict_event(store_.bucket_name(), entry.slot, entry.session->task_id, entry.token(),
                                        result.revision != 0 ? result.revision : entry.revision, "commit",
                                        result.held, "warn", Actor::here(me_)));
  }
  return result;
}

CommitGuard SlotLifecycle::holds_guard(const SessionEntry& entry, CommitResult& result) const {
  // Listed while git stages and writes the tree: the guard waits for it
  // only when the commit has changes to compare.
  std::shared_future<std::vector<LeaseEntry>> listed =
      std::async(std::launch::async, [this, slot = entry.slot] {
        return translating_kv([&] { return holds_.live_exclusive_of_others(slot, HoldStore::Listing::replay); });
      }).share();
  return [this, &entry, &result, listed](const std::vector<std::string>& paths) {
    std::vector<LeaseEntry> others;
    try {
      others = listed.get();
    } catch (const Error& e) {
      // Under warn the comparison is advice: the commit goes on, saying so.
      if (config_.holds == HoldPolicy::refuse) throw;
      result.warnings.push_back(std::string("the holds of other slots could not be read, so this commit was not "
                                            "compared with them: ") + e.what());
      return;
    }
    if (others.empty()) return;
    result.held = held_elsewhere(others, entry.slot, paths);
    if (result.held.empty() || config_.holds != HoldPolicy::refuse) return;
    // Revision 0: a refused commit wrote nothing (the event gets an id of its own).
    journal_.record(hold_conflict_event(store_.bucket_name(), entry.slot, entry.session->task_id, entry.token(), 0,
                                        "commit", result.held, "refuse", Actor::here(me_)));
    throw Error(Errc::conflict, "nothing was committed: this commit changes paths other slots hold exclusively: " +
                                    held_paths_text(result.held) + ", and the workspace refuses such commits "
                                    "(`swarm up --holds refuse`); wait for their holds to end (`swarm holds`), "
                                    "or leave those paths out");
  };
}

Worktree SlotLifecycle::open_worktree(const std::string& slot) const {
  if (!has_worktree(slot))
    throw Error(Errc::not_found, "slot " + slot + " has no worktree at " + workspace_.worktree(slot).string() +
                                     "; close the slot and join it again");
  return Worktree::open(workspace_.worktree(slot), slot, hub_);
}

CommitAuthor SlotLifecycle::author_of(const Session& session) const {
  // From the record, so data: one line, escaped, with nothing that ends a
  // signature's name or mail (a newline would add a header to the commit).
  auto clean = [](const std::string& text) {
    std::string out = printable(text);
    for (char& c : out)
      if (c == '<' || c == '>') c = '_';
    return out;
  };
  const std::string name = session.agent_id.empty() ? "swarm" : clean(session.agent_id);
  return {name, name + "@" + clean(me_.host)};
}

}  // namespace swarm
