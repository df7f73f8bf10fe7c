// A nats CLI context (`nats context save NAME ...`): a JSON file in the nats
// CLI's context folder naming a server and how to log in to it, so that no
// secret has to be on swarm's command line (--context NAME, $NATS_CONTEXT).
#pragma once

#include <filesystem>
#include <string>

namespace kv {

// The documented fields swarm uses ("" when absent).
struct NatsContext {
  std::string url;
  std::string user;
  std::string password;
  std::string token;
  std::string creds;  // a credentials file
  std::string nkey;   // a user nkey seed file
  std::string cert;
  std::string key;
  std::string ca;
};

// The folder the nats CLI keeps contexts in: $XDG_CONFIG_HOME/nats/context,
// else ~/.config/nats/context.
std::filesystem::path nats_context_dir();

// Reads context `name` from `dir`. Throws bad_request naming the file when
// the name is no plain name, the file is missing, or it is not a JSON object
// whose fields above are strings.
NatsContext read_nats_context(const std::string& name, const std::filesystem::path& dir = nats_context_dir());

}  // namespace kv
