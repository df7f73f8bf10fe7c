// `swarm serve` run as its own process for the tests: started on a free port
// of 127.0.0.1, its link (with the workspace's secret) read from the first
// line it prints, asked with the secret as a Bearer header by default, and
// stopped (SIGTERM) when it goes. Plus raw HTTP, for what a client library
// would not send (a forged Host, a request trickled in).
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "e2e/swarm_fixture.h"

namespace testing {

class Served {
 public:
  // `shell` (e.g. "ulimit -n 1024"): run by sh before it execs swarm serve.
  explicit Served(const SwarmWorkspace& ws, const std::vector<std::string>& args = {},
                  const std::map<std::string, std::string>& env = kHostA, const std::string& shell = {});
  ~Served();
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  RunResult stop(int signo = SIGTERM);
  int port() const { return port_; }
  // The link it printed first (with its one-time code unless --no-auth),
  // and the workspace's secret (.swarm/serve/token; "" with --no-auth).
  const std::string& link() const { return link_; }
  const std::string& secret() const { return secret_; }
  // The next line it prints on stdout (the new link once one was used).
  std::optional<std::string> read_line(std::chrono::milliseconds limit);
  pid_t pid() const { return process_.pid(); }

  // GET `path` with the secret as a Bearer header (none when `auth` is false).
  httplib::Result get(const std::string& path, bool auth = true, const httplib::Headers& headers = {}) const;
  // GET `path`'s body, checked to be a 200.
  std::string body(const std::string& path) const;

 private:
  Process process_;
  int port_ = 0;
  std::string link_;
  std::string secret_;
  bool stopped_ = false;
};

// What a raw HTTP exchange on 127.0.0.1:`port` answered (the whole answer,
// until the server closed or `limit` passed); "" when nothing came.
std::string raw_http(int port, const std::string& request, std::chrono::milliseconds limit = std::chrono::seconds(5));
// The status of an HTTP answer's first line (0 when there is none).
int status_of(const std::string& answer);

// The value of the sample `series` (its name and labels exactly) in a
// Prometheus text page; -1 when absent.
double sample(const std::string& page, const std::string& series);

// Waits until `ok(body of path)` holds, within `limit`.
bool eventually_body(const Served& served, const std::string& path, const std::function<bool(const std::string&)>& ok,
                     std::chrono::milliseconds limit = std::chrono::seconds(15));

// Where the tests keep what people look at (screenshots), for the README and CI artifacts.
std::filesystem::path artifacts();

}  // namespace testing
