#include "support/browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace testing {

namespace {

constexpr std::chrono::seconds kCallLimit{30};

std::string base64_decode(const std::string& in) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int value = 0, bits = -8;
  for (char c : in) {
    const auto at = kAlphabet.find(c);
    if (at == std::string::npos) continue;  // '=' and line breaks
    value = (value << 6) + static_cast<int>(at);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((value >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

}  // namespace

std::string chromium_path() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

HeadlessBrowser::HeadlessBrowser(const std::vector<std::string>& extra) : profile_("swarm-chromium") {
  const std::string program = chromium_path();
  if (program.empty()) throw std::runtime_error("no chromium on this machine (apt-get install chromium)");
  int to[2], from[2];
  if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = {program,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-dev-shm-usage",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-extensions",
                                   "--remote-debugging-pipe",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--user-data-dir=" + profile_.path().string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("about:blank");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(to[0], 3);
    ::dup2(from[1], 4);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  to_browser_ = to[1];
  from_browser_ = from[0];
}

HeadlessBrowser::~HeadlessBrowser() {
  if (to_browser_ >= 0) ::close(to_browser_);
  if (from_browser_ >= 0) ::close(from_browser_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

swarm::Json HeadlessBrowser::call(const std::string& method, swarm::Json params, bool in_page) {
  const int id = next_id_++;
  swarm::Json message = swarm::Json::object();
  message.set("id", id).set("method", method).add("params", std::move(params));
  if (in_page) message.set("sessionId", session_);
  std::string text = message.dump();
  text.push_back('\0');
  for (std::size_t sent = 0; sent < text.size();) {
    ssize_t n = ::write(to_browser_, text.data() + sent, text.size() - sent);
    if (n <= 0) throw std::runtime_error("chromium closed its pipe");
    sent += static_cast<std::size_t>(n);
  }
  const auto end = std::chrono::steady_clock::now() + kCallLimit;
  while (std::chrono::steady_clock::now() < end) {
    for (auto zero = pending_.find('\0'); zero != std::string::npos; zero = pending_.find('\0')) {
      swarm::Json reply = swarm::Json::parse(pending_.substr(0, zero));
      pending_.erase(0, zero + 1);
      const cJSON* got = reply ? cJSON_GetObjectItemCaseSensitive(reply.get(), "id") : nullptr;
      if (!cJSON_IsNumber(got) || got->valueint != id) continue;  // an event, or another reply
      if (const cJSON* error = cJSON_GetObjectItemCaseSensitive(reply.get(), "error"))
        throw std::runtime_error(method + " failed: " + swarm::Json::copy(error).dump());
      return swarm::Json::copy(cJSON_GetObjectItemCaseSensitive(reply.get(), "result"));
    }
    pollfd p{from_browser_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char buffer[65536];
    ssize_t n = ::read(from_browser_, buffer, sizeof buffer);
    if (n <= 0) throw std::runtime_error("chromium ended while " + method + " was pending");
    pending_.append(buffer, static_cast<std::size_t>(n));
  }
  throw std::runtime_error(method + ": no answer from chromium within 30 s");
}

void HeadlessBrowser::open(const std::string& url, int width, int height) {
  swarm::Json target = swarm::Json::object();
  target.set("url", "about:blank");
  swarm::Json made = call("Target.createTarget", std::move(target), false);
  swarm::Json attach = swarm::Json::object();
  attach.set("targetId", cJSON_GetObjectItemCaseSensitive(made.get(), "targetId")->valuestring).set("flatten", true);
  swarm::Json attached = call("Target.attachToTarget", std::move(attach), false);
  session_ = cJSON_GetObjectItemCaseSensitive(attached.get(), "sessionId")->valuestring;
  swarm::Json metrics = swarm::Json::object();
  metrics.set("width", width).set("height", height).set("deviceScaleFactor", 1).set("mobile", false);
  call("Emulation.setDeviceMetricsOverride", std::move(metrics), true);
  swarm::Json navigate = swarm::Json::object();
  navigate.set("url", url);
  call("Page.navigate", std::move(navigate), true);
}

std::string HeadlessBrowser::evaluate(const std::string& expression) {
  swarm::Json params = swarm::Json::object();
  params.set("expression", expression).set("returnByValue", true);
  swarm::Json result = call("Runtime.evaluate", std::move(params), true);
  const cJSON* value = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(result.get(), "result"), "value");
  return value ? swarm::Json::copy(value).dump() : "null";
}

bool HeadlessBrowser::wait_for(const std::string& expression, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  do {
    if (evaluate("Boolean(" + expression + ")") == "true") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

void HeadlessBrowser::screenshot(const std::string& path) {
  swarm::Json params = swarm::Json::object();
  params.set("format", "png");
  swarm::Json shot = call("Page.captureScreenshot", std::move(params), true);
  std::ofstream out(path, std::ios::binary);
  out << base64_decode(cJSON_GetObjectItemCaseSensitive(shot.get(), "data")->valuestring);
}

std::string HeadlessBrowser::cookies() {
  swarm::Json got = call("Storage.getCookies", swarm::Json::object(), false);
  const cJSON* list = cJSON_GetObjectItemCaseSensitive(got.get(), "cookies");
  return list ? swarm::Json::copy(list).dump() : "[]";
}

void HeadlessBrowser::close() {
  if (pid_ <= 0) return;
  try {
    call("Browser.close", swarm::Json::object(), false);
  } catch (const std::exception&) {
    // It may end before it answers.
  }
  const auto end = std::chrono::steady_clock::now() + kCallLimit;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= end) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  pid_ = -1;
}

}  // namespace testing
