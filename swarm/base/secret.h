// Secrets swarm makes for a workspace (the embedded server's token, serve's
// token): random, kept in a file of mode 0600 created without following a
// link, and read back the same way. One place, so that every secret is made
// and found alike.
#pragma once

#include <optional>
#include <string>

#include "swarm/base/safe_dir.h"

namespace swarm {

// 48 hex digits from the kernel's random source.
std::string random_secret();
// The secret kept in `dir`/`name` (trailing white space dropped); nullopt
// when there is none or it is empty.
std::optional<std::string> read_secret(const SafeDir& dir, const std::string& name);
// The secret in `dir`/`name`, made (0600, exclusively) when there is none:
// two processes that make it at once end up with the same one.
std::string ensure_secret(const SafeDir& dir, const std::string& name);

}  // namespace swarm
