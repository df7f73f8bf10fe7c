#include "e2e/serve_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "support/eventually.h"

namespace testing {

Served::Served(const SwarmWorkspace& ws, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env, const std::string& shell)
    : process_([&] {
        std::vector<std::string> all = {"serve", "--listen", "127.0.0.1:0"};
        all.insert(all.end(), args.begin(), args.end());
        Command command = ws.command(all, env);
        if (!shell.empty())
          command.args.insert(command.args.begin(), {"/bin/sh", "-c", shell + " && exec \"$0\" \"$@\""});
        return command;
      }()) {
  auto line = process_.read_line(std::chrono::seconds(20));
  REQUIRE_MESSAGE(line, "swarm serve printed no URL");
  const std::string prefix = "serving http://127.0.0.1:";
  REQUIRE_MESSAGE(line->rfind(prefix, 0) == 0, *line);
  port_ = std::stoi(line->substr(prefix.size()));
  link_ = line->substr(std::string("serving ").size());
  // The secret is the workspace's, never in the link (a browser's history would keep it).
  if (link_.find('?') != std::string::npos) {
    secret_ = read_file(ws.root() / ".swarm/serve/token");
    while (!secret_.empty() && std::isspace(static_cast<unsigned char>(secret_.back()))) secret_.pop_back();
  }
}

std::optional<std::string> Served::read_line(std::chrono::milliseconds limit) { return process_.read_line(limit); }

Served::~Served() {
  if (!stopped_) stop();
}

RunResult Served::stop(int signo) {
  stopped_ = true;
  process_.signal(signo);
  return process_.wait(std::chrono::seconds(20));
}

httplib::Result Served::get(const std::string& path, bool auth, const httplib::Headers& headers) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(10, 0);
  httplib::Headers all = headers;
  if (auth && !secret_.empty()) all.emplace("Authorization", "Bearer " + secret_);
  return client.Get(path.c_str(), all);
}

std::string Served::body(const std::string& path) const {
  auto r = get(path);
  const std::string what = "GET " + path + " failed";
  REQUIRE_MESSAGE(r, what);
  CHECK_MESSAGE(r->status == 200, path);
  return r->body;
}

std::string raw_http(int port, const std::string& request, std::chrono::milliseconds limit) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    const auto end = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) break;
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  return answer;
}

int status_of(const std::string& answer) {
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return 0;
  return std::atoi(answer.substr(9, 3).c_str());
}

double sample(const std::string& page, const std::string& series) {
  auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + series.size() + 2));
}

bool eventually_body(const Served& served, const std::string& path, const std::function<bool(const std::string&)>& ok,
                     std::chrono::milliseconds limit) {
  return eventually([&] {
    auto r = served.get(path);
    return r && r->status == 200 && ok(r->body);
  }, limit);
}

std::filesystem::path artifacts() {
  std::filesystem::path dir = std::filesystem::path(SWARM_TEST_ARTIFACTS);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace testing
