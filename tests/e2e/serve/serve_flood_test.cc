// swarm serve past its connection cap: a local user churns thousands of
// connections without the secret (opened and closed in a loop from several
// threads, some of them trickling a request's first line and going quiet)
// while the owner scrapes /metrics with the bearer secret. Every one of the
// owner's scrapes is answered 200, each within a bound (adr/0035, adr/0061).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <thread>

#include "e2e/serve_fixture.h"
#include "e2e/swarm_fixture.h"

using namespace testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A connection to 127.0.0.1:`port` whose connect gives up after `limit`
// (-1 when it could not be made).
int connect_within(int port, std::chrono::milliseconds limit) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(limit.count() % 1000 * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect() too
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Closed with a reset, so that the churn leaves no TIME_WAIT behind to run
// this machine out of ports.
void slam(int fd) {
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
}

// One scrape of /metrics with the secret on a connection of its own: the
// answer's status (0 when none came within `limit`, connect included).
int scrape(int port, const std::string& secret, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  const int fd = connect_within(port, limit);
  if (fd < 0) return 0;
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nAuthorization: Bearer " + secret + "\r\nConnection: close\r\n\r\n";
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  char buffer[8192];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  // Only a whole page counts: the last sample serve writes is there.
  return answer.find("swarm_nats_up") != std::string::npos ? status_of(answer) : 0;
}

}  // namespace

TEST_CASE("Serve_AChurningFloodPastItsCapNeverResetsTheOwnersScrape") {
  // serve under a file limit of 1,024 caps itself at 896 connections; the flood keeps about 4,000 open,
  // each thread opening new ones and resetting its oldest as fast as it can, half of them sending the
  // first line of a request and nothing more (a request being read: busy, not idle).
  constexpr int kThreads = 4;
  constexpr std::size_t kHeldEach = 1000;
  constexpr int kScrapes = 24;
  // A SYN the kernel drops on a full accept queue is sent again after 1 s, then 2 s more: the bound
  // leaves room for two such retries (what user space cannot help), no more.
  constexpr auto kBound = 5s;
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, kThreads * kHeldEach + 512);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  REQUIRE_MESSAGE(limit.rlim_cur >= kThreads * kHeldEach + 512, "this test needs 4,512 open files");
  SwarmWorkspace ws;
  Served served(ws, {}, kHostA, "ulimit -n 1024");
  std::atomic<bool> stop{false};
  std::atomic<long> opened{0};
  std::vector<std::thread> flood;
  for (int t = 0; t < kThreads; ++t)
    flood.emplace_back([&, t] {
      std::deque<int> held;
      const std::string first_line = "GET /metrics HTTP/1.1\r\n";
      for (long i = 0; !stop; ++i) {
        const int fd = connect_within(served.port(), 500ms);
        if (fd >= 0) {
          if ((i + t) % 2 == 0) (void)!::send(fd, first_line.data(), first_line.size(), MSG_NOSIGNAL);
          held.push_back(fd);
          ++opened;
        }
        while (held.size() > kHeldEach) {
          slam(held.front());
          held.pop_front();
        }
      }
      for (int fd : held) slam(fd);
    });
  // The flood is past the cap before the owner asks.
  const auto started = Clock::now();
  while (opened < 3000 && Clock::now() - started < 20s) std::this_thread::sleep_for(20ms);
  CHECK(opened >= 3000);
  int answered = 0;
  std::chrono::milliseconds slowest{0};
  for (int i = 0; i < kScrapes; ++i) {
    const auto asked = Clock::now();
    const int status = scrape(served.port(), served.secret(), kBound);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - asked);
    slowest = std::max(slowest, took);
    CHECK_MESSAGE(status == 200, "scrape ", i, " answered ", status, " after ", took.count(), " ms");
    if (status == 200) ++answered;
    std::this_thread::sleep_for(100ms);  // the scrapes are spread over the flood
  }
  const long total = opened;
  stop = true;
  for (auto& t : flood) t.join();
  MESSAGE(answered, " of ", kScrapes, " scrapes answered 200, the slowest in ", slowest.count(), " ms, under ", total,
          " connections opened in ", std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count(),
          " ms");
  CHECK(answered == kScrapes);
  // And once the flood is gone, serve is as it was.
  CHECK(served.get("/metrics")->status == 200);
}
