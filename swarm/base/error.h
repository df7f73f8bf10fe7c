// swarm::Error is the one error type above the kv layer. Its kind decides the
// exit code (cli/exit_code.cc); its message names the slot or lease and says
// what to do next.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "kv/error.h"

namespace swarm {

enum class Errc {
  internal,          // a bug or an unexpected failure                      -> 1
  bad_input,         // bad name, duration, path, flag combination          -> 2
  conflict,          // held by someone else, or a CAS race was lost        -> 3
  corrupt,           // a record that cannot be read; doctor/evict fix it   -> 3
  not_found,         // no session or lease by that name                    -> 4
  blob_missing,      // a blob a message names is not in the store            -> 4
  foreign_host,      // the session belongs to another host                 -> 5
  not_bootstrapped,  // no .swarm/, no config, no hub, no bucket            -> 6
  unavailable,       // NATS unreachable or timed out                       -> 7
  problems_remain,   // doctor found problems it did not fix                -> 8
  filesystem,        // the local filesystem refused: full, read-only, denied -> 9
};

std::string_view to_string(Errc kind);

class Error : public std::runtime_error {
 public:
  Error(Errc kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  Errc kind() const { return kind_; }

  // The same situation is the same kind and the same words wherever it is
  // met: a record that cannot be read is `corrupt`, a session's or a lease's.
  static Error corrupt_session(const std::string& slot, const std::string& why);
  static Error corrupt_lease(const std::string& name, const std::string& why);
  // What the local filesystem refused (full, read-only, denied), naming the path.
  static Error filesystem(const std::filesystem::filesystem_error& error);
  // Any exception in swarm's terms: a swarm::Error as it is, the kv layer's
  // and the filesystem's errors mapped, anything else internal. The one place
  // a caller (the CLI) needs to turn what the library threw into a kind.
  static Error from(const std::exception& error);

 private:
  Errc kind_;
};

// What a write refused by a full store says, after the server's own words:
// the exit is 9, as for a full local filesystem.
inline constexpr std::string_view kStoreFullNote =
    "the NATS server's store is full: it refuses writes until there is room where it keeps it, or its JetStream "
    "storage limit is raised";

// The kv layer's error in swarm's terms: same message, kind mapped
// (timeout and unavailable both become unavailable; a full store, no_room,
// is filesystem, its message followed by kStoreFullNote).
Error from_kv(const kv::Error& error);

// What opening one of the workspace's buckets threw, in swarm's terms: a
// bucket that is not there is not_bootstrapped, naming it (`what`: "session",
// "lease") and `server`; anything else as from_kv.
Error bucket_open_error(const kv::Error& error, std::string_view what, const std::string& bucket,
                        const std::string& server);

// Runs `call`, turning any kv::Error it throws into a swarm::Error.
template <typename Call>
auto translating_kv(Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const kv::Error& e) {
    throw from_kv(e);
  }
}
}  // namespace swarm
