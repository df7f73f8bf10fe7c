// The verbs' --json documents, for whoever else serves them (swarm serve's
// /api paths): built by the same code as the verbs print.
#pragma once

#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "swarm/base/json.h"
#include "swarm/landing/landing.h"
#include "swarm/lease/lease.h"
#include "swarm/lease/semaphore.h"
#include "swarm/slots/status.h"
#include "swarm/tasks/task_rules.h"
#include "swarm/tasks/task_store.h"

namespace cli {

// swarm.<verb>.v1: "schema" first, then `doc`'s members.
swarm::Json with_schema(const std::string& verb, swarm::Json doc);
// swarm.status.v1 of `rows` to `out` in pieces of about 64 KiB, ending
// with a newline; a watch adds "change" (null on its first line).
void write_status_json(std::ostream& out, const std::string& bucket, std::chrono::milliseconds ttl,
                       const std::vector<swarm::SessionRow>& rows, bool watching = false,
                       const swarm::Json* change = nullptr);
// The same as one line without its newline.
std::string status_json(const std::string& bucket, std::chrono::milliseconds ttl,
                        const std::vector<swarm::SessionRow>& rows, bool watching, const swarm::Json* change);
// swarm.status.v1 of `rows` (one line, no newline).
std::string status_document(const std::string& bucket, std::chrono::milliseconds ttl,
                            const std::vector<swarm::SessionRow>& rows);
// One lease as swarm.lease.v1 has it (the record's fields, then its state,
// age, time left and waiters); a listing's {"leases"} and, with its
// semaphores, {"leases","semaphores"}.
swarm::Json lease_json(const swarm::LeaseEntry& e, const swarm::LeaseStanding& s, int waiters);
// A lease this process was just granted or renewed, as {"leases":[it]}:
// stored a moment ago, so 0 old.
swarm::Json granted_lease_json(const swarm::LeaseStore& store, const swarm::Lease& lease);
swarm::Json leases_of(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                      swarm::TimePoint now);
swarm::Json listing_of(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                       const std::vector<swarm::SemaphoreSummary>& semaphores, swarm::TimePoint now);
// A semaphore as `lease limit --json` and a listing give it.
swarm::Json semaphore_json(const swarm::SemaphoreSummary& s);
// swarm.lease.v1 of a listing (as `lease list --json`), its semaphores included.
swarm::Json leases_document(const std::vector<swarm::LeaseEntry>& entries, const std::map<std::string, int>& waiting,
                            const std::vector<swarm::SemaphoreSummary>& semaphores, swarm::TimePoint server_now);
// Holds (live ones, as HoldStore::live lists them) as swarm.holds.v1 lists
// them: [{"name","slot","host","patterns","kind","token","session","reason",
// "state","age_seconds","expires_in_seconds"}] (a corrupt one: {"name",
// "state":"corrupt","error",...}); and the whole document.
swarm::Json hold_rows(const std::vector<swarm::LeaseEntry>& holds, swarm::TimePoint server_now);
swarm::Json holds_document(const std::vector<swarm::LeaseEntry>& holds, swarm::TimePoint server_now);
// The state of each task of a listing by id (corrupt ones left out); `all`
// must outlive it (its ids are not copied).
swarm::StateOf states_of(const std::vector<const swarm::TaskEntry*>& all);
swarm::StateOf states_of(const std::vector<swarm::TaskEntry>& all);
// `task list`'s order of a listing: priority, then age, then id; corrupt
// records last, in the order they came.
void sort_listed(std::vector<const swarm::TaskEntry*>& entries);
// One task as swarm.tasks.v1 lists it: the record, "revision" and "ready"
// (a corrupt one: {"key","revision","state":"corrupt","error"}).
swarm::Json task_json(const swarm::TaskEntry& e, const swarm::StateOf& state_of);
// swarm.tasks.v1 of `shown` (in their order), members of `all`.
swarm::Json tasks_document(const std::vector<const swarm::TaskEntry*>& shown, const swarm::StateOf& state_of);
// swarm.branches.v1's members; and the whole document.
swarm::Json branches_of(const swarm::Branches& report);
swarm::Json branches_document(const swarm::Branches& report);
// land's --json document and its line of text, for one land.
swarm::Json land_document(const swarm::LandResult& r);
std::string land_summary(const swarm::LandResult& r);
// Foreseen conflicts as branches' `conflicts` and commit's `overlaps`:
// [{"with","slot","paths"}], `slot` null for the onto branch.
swarm::Json overlaps_json(const std::vector<swarm::Overlap>& overlaps);
// One line of text per overlap: "conflicts with slot S on a, b" (escaped).
std::string overlaps_text(const std::vector<swarm::Overlap>& overlaps, const std::string& indent);

}  // namespace cli
