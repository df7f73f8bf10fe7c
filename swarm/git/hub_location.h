// Where a workspace's hub is: a folder on this machine (the default
// .swarm/hub.git, or a path on a shared filesystem), or a URL git pushes to
// over the network (ssh://, user@host:path, git://, http://, https://).
// Parsing and the reachability probe need no libgit2: the CLI refuses a bad
// --hub before any I/O, and the git module probes before it connects.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace swarm {

struct HubLocation {
  enum class Transport { local, ssh, git, http, https };

  Transport transport = Transport::local;
  // What config.json keeps and git is given: an absolute path, or the URL as written.
  std::string text;
  // Network transports only: the host (no brackets for IPv6), and the port
  // given or the transport's default (22, 9418, 80, 443).
  std::string host;
  int port = 0;

  bool remote() const { return transport != Transport::local; }
  // The hub's folder (local only).
  std::filesystem::path path() const { return text; }
  // `text` with the password of a URL replaced by ***: for messages, logs
  // and records, so a credential never leaves this machine's config.
  std::string shown() const { return redact(text); }
  // `message` with this hub's password (if its URL has one) replaced by ***
  // wherever the URL appears in it.
  std::string redact(const std::string& message) const;
  // The hub as sessions record it (hub_url): file://<canonical path>, or the
  // URL as shown(). Every verb and doctor compare this text.
  std::string session_url() const;
  // Whether the URL carries a password (scheme://user:password@host/...), and it.
  bool has_password() const;
  std::string password() const;
  // The URL with its password taken out (user@ kept): what a clone keeps
  // as its origin, so that no clone's config holds the secret.
  std::string without_password() const;
  // Throws bad_input naming the URL when it would send a password over
  // plain http:// (anyone on the way reads it).
  void require_no_password_over_http() const;
};

// Parses a hub given by the user (--hub) or read from config.json; relative
// paths are taken from `base`. Throws bad_input naming the value: an empty
// one, control characters, an unknown scheme (ftp://), a URL without a host,
// a bad port.
HubLocation parse_hub_location(const std::string& given, const std::filesystem::path& base);

// The socket addresses (sockaddr bytes) a network hub's host and port
// resolve to now. Throws unavailable naming the hub when the host does not resolve.
std::vector<std::string> resolve_hub(const HubLocation& hub);

// For a network hub: whether a TCP connection to its host and port opens
// within `timeout`, so that an unreachable hub is exit 7 in seconds (libgit2
// 1.5 has no connect timeout: a silent host would hang it for minutes).
// Throws unavailable naming the URL and why. Skipped for http(s) behind a
// proxy ($https_proxy, $http_proxy, $all_proxy set). Does nothing for a local hub.
void require_reachable(const HubLocation& hub, std::chrono::milliseconds timeout);

// How long require_reachable waits for a hub's TCP connection.
inline constexpr std::chrono::seconds kHubConnectTimeout{10};

}  // namespace swarm
