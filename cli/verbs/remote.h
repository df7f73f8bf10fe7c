// A verb's request and result as lines on a Unix socket: how `swarm VERB`
// inside an agent is answered by the `swarm run` that started it, with no
// NATS connection of its own (adr/0056). One request line, then frames,
// each one JSON line:
//   -> {"verb":"renew","arguments":{...},"json":false,"presentation":{...},"input":BASE64}
//   <- {"warn":TEXT} {"note":TEXT} {"item":DOC,"line":TEXT} ...
//   <- {"result":{"verb","doc"|"rendered","text","text_is_safe","exit","items_only"}}
//    | {"error":{"kind","message"}}
// The arguments are the verb's table (request_json), read back by
// request_from_json: the same request as MCP's tools/call takes.
#pragma once

#include <string>

#include "cli/verbs/verb.h"
#include "swarm/base/error.h"

namespace cli {

// The variable `swarm run` sets for its agent: the socket's path.
inline constexpr const char* kSocketVariable = "SWARM_SOCKET";
// A request line longer than this is refused (a body from standard input
// rides in it, base64).
inline constexpr std::size_t kMaxRequestLine = 48u << 20;

// The socket itself failed (nothing answers, the run ended mid-call): not
// the verb's error, so nothing about the workspace's server explains it.
class SocketUnreachable : public swarm::Error {
 public:
  using swarm::Error::Error;
};

// Sends the request (resolved where it was made) to the socket at `path`
// and relays what the verb says to `report`; its result, or its error
// thrown as the verb threw it. Unavailable (exit 7) when nothing answers.
VerbResult call_remote(const std::string& path, const VerbSpec& verb, const void* request, const Context& ctx,
                       Reporter& report);

// The frames, as the socket's server writes them (one line each, '\n' ended).
std::string warn_frame(const std::string& text);
std::string note_frame(const std::string& text);
std::string item_frame(const swarm::Json& doc, const std::string& line);
std::string result_frame(const VerbResult& result);
std::string error_frame(swarm::Errc kind, const std::string& message);

// A request line read back: its verb, its arguments, how it is presented,
// and the standard input it brought (decoded).
struct RemoteRequest {
  const VerbSpec* verb = nullptr;
  std::shared_ptr<void> request;
  bool json = false;
  Presentation presentation;
  std::string input;
};
// bad_input naming what is wrong with the line.
RemoteRequest read_request_line(const std::string& line);

}  // namespace cli
