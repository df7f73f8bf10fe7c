// A connection to a NATS server or cluster with JetStream. One per process is
// the norm; buckets opened on it share it and keep it alive.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kv {

namespace detail {
struct ConnectionState;
}

// Zero values are the production defaults, except `urls`, which must be set.
struct ConnectionOptions {
  std::vector<std::string> urls;  // one or more nats:// URLs; all are tried
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{5000};
  // When set, connecting and every request together wait at most this long,
  // retries included (see limit_total_wait): a one-shot command's --timeout.
  std::chrono::milliseconds total_wait{0};
  std::string name = "swarm";
  // Authentication: set at most one of user/password, token, creds_file,
  // nkey_file (a user nkey seed file, as the nats CLI's --nkey).
  std::string user;
  std::string password;
  std::string token;
  std::string creds_file;
  std::string nkey_file;
  // TLS: a CA file turns TLS on; cert and key go together (mutual TLS).
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;

  // When set, `token` is sent (at connect and at every reconnect) only while
  // this says the server listening at the URL is the one the token is for;
  // else an empty token goes. Called on nats.c's thread.
  std::function<bool()> token_guard;

  bool has_credentials() const {
    return !user.empty() || !password.empty() || !token.empty() || !creds_file.empty() || !nkey_file.empty();
  }
};

// Splits "nats://a:4222,nats://b:4222" into URLs, dropping empty parts.
std::vector<std::string> split_urls(const std::string& comma_separated);

// Throws bad_request naming the bad part unless `comma_separated` holds one
// or more server URLs nats.c can use: [nats|tls|ws|wss://][user[:pass]@]host[:port],
// with a host and a port of 1 to 65535.
void require_valid_urls(const std::string& comma_separated);

// Whether a server `version` ("2.9.10") is older than major.minor; false
// when it cannot be read.
bool version_before(const std::string& version, int major, int minor);

// The version the server at `url` greets a new connection with ("2.9.10"),
// read from its INFO line with no NATS session; "" when it does not answer
// within `timeout`.
std::string server_version_at(const std::string& url, std::chrono::milliseconds timeout);

// The URLs (one, or several comma-separated) with the secret of each
// (nats://user:PASSWORD@ or nats://TOKEN@, scheme or not) replaced by ***:
// how a URL is printed, logged or reported, always.
std::string redact_urls(const std::string& comma_separated);

class Connection {
 public:
  // Connects, or throws kv::Error: unavailable when no server answers within
  // connect_timeout (never hangs), bad_request for bad options or credentials.
  static Connection connect(const ConnectionOptions& options);

  std::string connected_url() const;
  std::chrono::milliseconds request_timeout() const;
  // Bounds the time all requests on this connection wait together, retries
  // included, from now on: a one-shot command's --timeout. Without it each
  // request may take request_timeout (right for a process that lives on).
  // Once it is spent, a request still gets one short attempt.
  void limit_total_wait(std::chrono::milliseconds limit);
  // Whether the connection is up now (not reconnecting, not closed): known
  // at once when the server goes, as its socket closes. No round trip.
  bool connected() const;
  // Microseconds of one round trip to the server (a PING), for diagnostics.
  std::chrono::microseconds rtt() const;
  // Whether the server's JetStream answers a request (account info) within
  // `wait`: a server whose store filled up answers PINGs, and its JetStream
  // nothing at all.
  bool jetstream_answers(std::chrono::milliseconds wait) const;
  // The account's JetStream file store limit in bytes, and what it uses;
  // nullopt when the account has no limit (the server's own applies) or
  // JetStream does not answer within `wait`.
  struct StoreUse {
    std::int64_t limit = -1;
    std::uint64_t used = 0;
  };
  std::optional<StoreUse> jetstream_store(std::chrono::milliseconds wait) const;
  // The version of the server connected to, as its greeting says ("2.9.10";
  // "" when it cannot be read). One short connection of its own, once.
  std::string server_version() const;
  // The id of the server connected to now, from its greeting (no round
  // trip): a new one at every start of a server, so a client can tell a
  // restarted server (which may have lost writes it acknowledged) from the
  // one it knew. "" while it is not connected.
  std::string server_id() const;

  const std::shared_ptr<detail::ConnectionState>& state() const { return state_; }

 private:
  friend class Bucket;
  explicit Connection(std::shared_ptr<detail::ConnectionState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::ConnectionState> state_;
};

}  // namespace kv
