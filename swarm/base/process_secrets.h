// What a swarm process that holds secrets does so that nothing it runs (a
// land check, an AGENT, a lock's command) can take them from /proc: it is
// not dumpable (its /proc/PID/environ, mem, cwd and fd are closed to every
// other process of the same user, ptrace is refused, no core is dumped;
// /proc/PID/stat and cmdline stay readable, so its pid and start time can
// still be checked), and the credentials it was given in its environment
// leave the environment once read: kept here, removed from it, and their
// bytes in the block the kernel shows as /proc/PID/environ overwritten
// (unsetenv alone leaves them there). A child gets them back only where
// swarm passes them on: child_environment().
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace swarm {

// This process is not dumpable from now on (PR_SET_DUMPABLE 0; its forks
// inherit it, an exec'd program does not). First thing in main.
void make_undumpable();

// Whether `name` is one of the credential variables swarm reads: NATS_*
// (the server's URL, its user, password, token, creds, nkey, TLS files,
// context), SWARM_HUB_* and SWARM_SESSION.
bool is_credential_variable(std::string_view name);

// Moves every credential variable out of the environment (see above). Call
// it once they were read (the arguments parsed), while no other thread reads
// the environment. A later call takes what was set since.
void take_credentials_from_environment();

// The value of `name`: the environment's, else that of a credential taken
// from it; nullopt when neither has it.
std::optional<std::string> environment_value(const char* name);

// The environment a child starts with ("NAME=value" each): this process's,
// with the credentials taken from it back in, less every variable `withhold`
// names (null: none).
std::vector<std::string> child_environment(bool (*withhold)(std::string_view name) = nullptr);

}  // namespace swarm
