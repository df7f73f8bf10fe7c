// kv::Error is the one error type of the key-value layer. Callers branch on its
// kind (a lost CAS race is a conflict, not a failure) and show its message, which
// always names the bucket and, where there is one, the key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kv {

enum class Errc {
  not_found,    // no such key (or the key was deleted), or no such bucket
  conflict,     // a CAS precondition failed: the key exists, or its revision moved on
  unavailable,  // no server answers: connection refused, no JetStream, no responders
  timeout,      // a server was reached but did not answer within the request timeout
  bad_request,  // the request itself is wrong: bad key, bad bucket name, bad config
  no_room,      // the server's store has no room for what was asked (a stream's size)
  internal,     // anything else nats.c reports
};

std::string_view to_string(Errc kind);

class Error : public std::runtime_error {
 public:
  Error(Errc kind, std::string message, std::uint64_t current_revision = 0)
      : std::runtime_error(std::move(message)), kind_(kind), current_revision_(current_revision) {}

  Errc kind() const { return kind_; }
  // For a conflict: the key's revision on the server when it is known, else 0.
  std::uint64_t current_revision() const { return current_revision_; }

 private:
  Errc kind_;
  std::uint64_t current_revision_;
};

// A no_room that is a stream's (or object store's) own limit, met under
// discard-new, not the server's store: the server still takes other writes.
bool at_own_limit(const Error& error);

// Names a place in a bucket for error messages: "bucket B key K" or "bucket B".
std::string where(std::string_view bucket, std::string_view key = {});

}  // namespace kv
