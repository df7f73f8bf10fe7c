// The names users give: slots, leases and task ids. Checked before any I/O, so
// a bad name never reaches NATS, git or the filesystem.
#pragma once

#include <string_view>

namespace swarm {

// ^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$ : no '.', '/', spaces, '*', '>' or empty.
bool is_valid_slot_name(std::string_view name);
// Tokens of the slot rule joined by single dots ("task.T-42"), 255 chars at most.
bool is_valid_lease_name(std::string_view name);

// Throw swarm::Error(bad_input) naming the rule.
void require_slot_name(std::string_view name);
void require_lease_name(std::string_view name);
// A task id is whatever the caller's tracker uses (T-42, gh#17, acme/api#9):
// 1 to 255 bytes of UTF-8 without control characters. Its lease is
// task_lease_name(id) (lease.h), a hash when the id is no lease name.
bool is_valid_task_id(std::string_view id);
void require_task_id(std::string_view id);

}  // namespace swarm
