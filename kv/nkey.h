// NATS nkeys (a user's ed25519 key pair in NATS's base32 text form): the
// public key that goes with a seed, for connecting with --nkey / $NATS_NKEY
// as the nats CLI does (nats.c signs with the seed file itself).
#pragma once

#include <string>

namespace kv {

// The public key ("U...") of an nkey seed ("SU..."). Throws bad_request
// when `seed` is not one (its checksum, its length, its prefix).
std::string nkey_public_key(const std::string& seed);

// The seed in the nkey file `path` (its first word that reads as one).
// Throws bad_request naming the file when it cannot be read or holds none.
std::string read_nkey_seed(const std::string& path);

}  // namespace kv
