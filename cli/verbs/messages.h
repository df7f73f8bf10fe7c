// What send, ask, ack (messages.cc) and inbox (inbox.cc) share: whose inbox
// a verb speaks for, the bus's state, a message's conversation.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cli/verbs/context.h"
#include "swarm/bus/bus.h"

namespace cli {

// The inbox a verb speaks for: `given` (--as, --from), else $SWARM_SLOT,
// else the slot of the caller's worktree; bad_input naming `option` otherwise.
std::string inbox_name(const Context& ctx, const std::string& given, const char* option);
// The bus's state, or exit 6 when the workspace has none.
kv::StreamStatus bus_state(const swarm::Bus& bus);
// The corr of message `id` among those to `inbox` and to all, read from
// the bus's start; nullopt when the bus keeps none such.
std::optional<std::string> corr_of(const swarm::Bus& bus, const std::string& inbox, const std::string& id);
// The check of a free word (--type, --corr, --id, --reply-to).
std::function<void(const std::string&)> word_check(const char* what);

}  // namespace cli
