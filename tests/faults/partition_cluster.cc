// Reads of the lease bucket on all three nodes, retried through elections and
// reconnects (partition_cluster.h).
#include "faults/partition_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <string>

#include "faults/partition_support.h"
#include "kv/bucket.h"
#include "swarm/workspace/bootstrap.h"

using namespace std::chrono_literals;

namespace partition {
namespace {

kv::ConnectionOptions root_connection(const Names& names) {
  kv::ConnectionOptions o;
  o.urls = kv::split_urls(names.all_urls());
  o.connect_timeout = 2s;
  o.request_timeout = 2s;
  o.name = "partition-runner";
  return o;
}

// Tries `read` on a fresh connection to all three nodes until it gives an
// answer or `limit` passes (an election, a reconnect).
template <class Read>
auto with_cluster(const Names& names, std::chrono::seconds limit, Read read) -> decltype(read(std::declval<kv::Bucket&>())) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    try {
      auto connection = swarm::connect_nats(root_connection(names));
      auto bucket = kv::Bucket::open(connection, kLeaseBucket);
      if (auto answer = read(bucket)) return answer;
    } catch (const std::exception&) {
      // No leader yet, or a node that does not answer: try again.
    }
    pause_for(500ms);
  }
  return std::nullopt;
}

// "n2" -> 2; 0 for anything else.
int node_named(const std::string& name) {
  if (name.size() != 2 || name[0] != 'n') return 0;
  int node = name[1] - '0';
  return node >= 1 && node <= kNodes ? node : 0;
}

// The body of GET http://IP:PORT/PATH (HTTP/1.0, no keep-alive), "" on any failure.
std::string http_get(const std::string& ip, int port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string response;
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) == 1 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: " + ip + "\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char buffer[8192];
      ssize_t n = 0;
      while ((n = ::recv(fd, buffer, sizeof buffer, 0)) > 0) response.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : response.substr(body + 4);
}

}  // namespace

int meta_leader(const Names& names) {
  auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until) {
    for (int node = 1; node <= kNodes; ++node) {
      // {"meta_cluster":{"name":..,"leader":"n2",..}}: the first "leader" after "meta_cluster".
      const std::string jsz = http_get(names.ip(node), kMonitorPort, "/jsz");
      auto meta = jsz.find("\"meta_cluster\"");
      auto key = meta == std::string::npos ? meta : jsz.find("\"leader\"", meta);
      auto open = key == std::string::npos ? key : jsz.find('"', jsz.find(':', key) + 1);
      auto close = open == std::string::npos ? open : jsz.find('"', open + 1);
      if (close == std::string::npos) continue;
      if (int leader = node_named(jsz.substr(open + 1, close - open - 1))) return leader;
    }
    pause_for(500ms);
  }
  return 0;
}

std::optional<std::string> lease_bucket_value(const Names& names, const std::string& key) {
  return with_cluster(names, 30s, [&](kv::Bucket& b) -> std::optional<std::string> {
    auto entry = b.get(key);
    return entry ? std::optional<std::string>(entry->value) : std::optional<std::string>(std::string());
  });
}

int lease_leader(const Names& names) {
  auto leader = with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<std::string> {
    auto name = b.leader();
    return name.empty() ? std::nullopt : std::optional<std::string>(name);
  });
  return leader ? node_named(*leader) : 0;
}

std::optional<unsigned long long> lease_last_revision(const Names& names) {
  return with_cluster(names, 30s, [](kv::Bucket& b) -> std::optional<unsigned long long> {
    bool deleted = false;
    auto last = b.last(kLease, &deleted);
    return last ? std::optional<unsigned long long>(last->revision) : std::nullopt;
  });
}

}  // namespace partition
