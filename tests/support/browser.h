// A real headless Chromium for tests of what people look at, driven over the
// DevTools protocol on a pipe (--remote-debugging-pipe: JSON messages ended
// by NUL on descriptors 3 and 4), so no WebSocket client is needed. Stopped
// when it goes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "swarm/base/json.h"

namespace testing {

// Whether a chromium (or chromium-browser) is on this machine.
std::string chromium_path();

class HeadlessBrowser {
 public:
  // `extra`: more of chromium's switches (--host-resolver-rules=..., say).
  explicit HeadlessBrowser(const std::vector<std::string>& extra = {});
  ~HeadlessBrowser();
  HeadlessBrowser(const HeadlessBrowser&) = delete;
  HeadlessBrowser& operator=(const HeadlessBrowser&) = delete;

  // Opens `url` in a new page (width x height) and attaches to it.
  void open(const std::string& url, int width = 1280, int height = 900);
  // Evaluates `expression` in the page; its value as JSON text ("null" when none).
  std::string evaluate(const std::string& expression);
  // Evaluates `expression` until it is true, or `limit` passes: whether it was.
  bool wait_for(const std::string& expression, std::chrono::milliseconds limit);
  // A PNG of the page as it is drawn now, written to `path`.
  void screenshot(const std::string& path);
  // Every cookie the browser holds, as the DevTools protocol lists them
  // (a JSON array of {name, value, domain, ...}).
  std::string cookies();
  // Closes the browser as a user would (Browser.close), so that it writes
  // its profile (History, Cookies) out, and waits for it to end.
  void close();
  // Its user-data-dir: the profile it writes (the History database is Default/History).
  const std::filesystem::path& profile() const { return profile_.path(); }

 private:
  swarm::Json call(const std::string& method, swarm::Json params, bool in_page);
  TempDir profile_;
  pid_t pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  int next_id_ = 1;
  std::string session_;
  std::string pending_;
};

}  // namespace testing
