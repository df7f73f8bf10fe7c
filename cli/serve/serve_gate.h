// Who may read swarm serve, and from where (adr/0035, adr/0060). A request
// must name this server in its Host, then carry the workspace's secret as a
// Bearer header, or be the page's: the link serve prints holds a one-time
// code (never the secret, which a browser's history would keep) that is
// traded for a session: an HttpOnly cookie plus a key the page fetches once
// and keeps in its origin's storage. A browser sends the cookie to every
// port of the host; alone it opens the page's own files and nothing else,
// so a service on another port that receives it reads nothing with it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "cli/serve/http_message.h"
#include "cli/serve/serve.h"

namespace cli {

// What every answer carries: never cached, never sniffed, never framed, and
// no Referer that would carry the page's address away.
HttpResponse secured(HttpResponse r);

class Gate {
 public:
  // `announce`: told each link made after the first (the last one was used).
  Gate(ListenAddress where, std::optional<std::string> secret, std::function<void(const std::string&)> announce);
  // The port bound: sessions are good for ADDR:PORT only.
  void set_port(int port);
  // A link to the page: with the live one-time code (plain without a secret).
  std::string link() const;
  // An answer that refuses `req` (or answers it: the session's key), or
  // nullopt to serve it. On the server's loop only: it keeps the sessions.
  std::optional<HttpResponse> check(const HttpRequest& req);

 private:
  struct Session {
    std::string key;             // what the page sends besides the cookie
    bool key_handed = false;     // the key is given once, to the page that signed in
    std::int64_t expires = 0;    // unix seconds
  };
  // The session the request's cookie names, alive; nullptr otherwise.
  Session* session_of(const HttpRequest& req);
  std::optional<HttpResponse> for_session(const HttpRequest& req, Session& session);
  std::optional<HttpResponse> sign_in(const HttpRequest& req);
  HttpResponse refused(const std::string& why) const;

  ListenAddress where_;
  std::optional<std::string> secret_;
  std::function<void(const std::string&)> announce_;
  int port_ = 0;
  std::string cookie_;           // swarm_serve_<port>: a browser keeps one per host, whatever the port
  std::string code_;             // the live link's one-time code
  std::deque<std::pair<std::string, Session>> sessions_;  // by the cookie's value, oldest first
};

}  // namespace cli
