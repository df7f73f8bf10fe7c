// HTTP/1.x requests and answers as swarm serve's loop reads and writes them:
// a request's head parsed (no body is ever taken), an answer serialized, and
// the secret compared without a timing leak.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cli {

struct HttpRequest {
  std::string method;  // GET, HEAD, ...
  std::string path;    // without the query, not decoded
  std::string query;   // after '?', not decoded
  std::map<std::string, std::string> headers;  // names in lower case
  // A header's value ("" when absent), and a query parameter's (decoded).
  std::string header(const std::string& lower_name) const;
  std::optional<std::string> param(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type and Content-Length
  static HttpResponse text(int status, std::string body);
};

// A request's head (up to, not including, the blank line); nullopt when it
// is not HTTP/1.x as a client sends it. `http10`: an HTTP/1.0 request.
std::optional<HttpRequest> parse_head(std::string_view head, bool* http10);
// An answer as sent: its status line, headers, and body (none for HEAD);
// `closing` adds Connection: close.
std::string serialize(const HttpResponse& r, bool head_only, bool closing);

// A value compared with a secret without telling by its timing where they differ.
bool same_secret(const std::string& given, const std::string& secret);

}  // namespace cli
