#include "cli/verbs/remote.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "swarm/base/error.h"
#include "swarm/base/safe_dir.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[n & 63] : '=';
  }
  return out;
}

std::string unbase64(const std::string& text) {
  if (text.size() % 4 != 0) throw swarm::Error(swarm::Errc::bad_input, "the request's input is not base64");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t n = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = std::strchr(kBase64, c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
        n <<= 6;
        continue;
      }
      if (c == '\0' || at == nullptr || pad > 0) throw swarm::Error(swarm::Errc::bad_input, "the request's input is not base64");
      n = (n << 6) | static_cast<std::uint32_t>(at - kBase64);
    }
    out += static_cast<char>((n >> 16) & 255);
    if (pad < 2) out += static_cast<char>((n >> 8) & 255);
    if (pad < 1) out += static_cast<char>(n & 255);
  }
  return out;
}

std::string line_of(swarm::Json j) { return j.dump() + "\n"; }

const cJSON* member(const cJSON* object, const char* name) {
  return cJSON_IsObject(object) ? cJSON_GetObjectItemCaseSensitive(object, name) : nullptr;
}

std::string text_member(const cJSON* object, const char* name) {
  const cJSON* m = member(object, name);
  return cJSON_IsString(m) ? m->valuestring : "";
}

swarm::Errc errc_of(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(swarm::Errc::filesystem); ++k)
    if (swarm::to_string(static_cast<swarm::Errc>(k)) == name) return static_cast<swarm::Errc>(k);
  return swarm::Errc::internal;
}

// All of the standard input a request reads (it rides in the request).
std::string read_input(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw swarm::Error(swarm::Errc::filesystem, std::string("cannot read standard input: ") + std::strerror(errno));
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > kMaxRequestLine / 4 * 3 - 4096)
      throw swarm::Error(swarm::Errc::bad_input, "standard input is more than the socket carries (" +
                                                     std::to_string(kMaxRequestLine / 4 * 3 / 1024 / 1024) +
                                                     " MiB); give the body as --file FILE");
  }
}

void send_all(int fd, const std::string& text, const std::string& path) {
  for (std::size_t at = 0; at < text.size();) {
    const ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw SocketUnreachable(swarm::Errc::unavailable, "the run behind $SWARM_SOCKET (" + swarm::printable(path) +
                                                            ") stopped reading the request: " + std::strerror(errno));
    at += static_cast<std::size_t>(n);
  }
}

swarm::UniqueFd connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw swarm::Error(swarm::Errc::bad_input, "$SWARM_SOCKET '" + swarm::printable(path) +
                                                   "' is no socket's path (empty, or longer than 107 bytes)");
  std::memcpy(addr.sun_path, path.data(), path.size());
  swarm::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw swarm::Error(swarm::Errc::internal, std::string("cannot make a socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    throw SocketUnreachable(swarm::Errc::unavailable,
                       "nothing answers on $SWARM_SOCKET (" + swarm::printable(path) + ": " + std::strerror(errno) +
                           "): the `swarm run` that set it has ended; unset SWARM_SOCKET to act with a connection of "
                           "this process's own");
  return fd;
}

VerbResult result_of(const cJSON* r) {
  VerbResult out;
  out.verb = text_member(r, "verb");
  if (const cJSON* doc = member(r, "doc"); cJSON_IsObject(doc)) out.doc = swarm::Json::copy(doc);
  out.rendered = text_member(r, "rendered");
  out.text = text_member(r, "text");
  out.text_is_safe = cJSON_IsTrue(member(r, "text_is_safe"));
  out.items_only = cJSON_IsTrue(member(r, "items_only"));
  const cJSON* exit = member(r, "exit");
  out.exit = cJSON_IsNumber(exit) ? static_cast<int>(exit->valuedouble) : 1;
  return out;
}

}  // namespace

VerbResult call_remote(const std::string& path, const VerbSpec& verb, const void* request, const Context& ctx,
                       Reporter& report) {
  swarm::Json envelope = swarm::Json::object();
  const Presentation p = terminal_presentation();
  swarm::Json presentation = swarm::Json::object();
  presentation.set("columns", static_cast<std::int64_t>(p.columns)).set("color", p.color);
  envelope.set("verb", verb.name()).set("arguments", request_json(verb, request)).set("json", ctx.wants_json())
      .set("presentation", std::move(presentation));
  if (verb.reads_input(request)) envelope.set("input", base64(read_input(ctx.standard_input())));
  const swarm::UniqueFd fd = connect_to(path);
  send_all(fd.get(), line_of(std::move(envelope)), path);
  ::shutdown(fd.get(), SHUT_WR);
  std::string pending;
  char buf[65536];
  for (;;) {
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      const swarm::Json frame = swarm::Json::parse(pending.substr(0, nl));
      pending.erase(0, nl + 1);
      const cJSON* f = frame.get();
      if (const cJSON* r = member(f, "result")) return result_of(r);
      if (const cJSON* e = member(f, "error"))
        throw swarm::Error(errc_of(text_member(e, "kind")), text_member(e, "message"));
      if (member(f, "warn")) report.warn(text_member(f, "warn"));
      else if (member(f, "note")) report.note(text_member(f, "note"));
      else if (const cJSON* item = member(f, "item"))
        if (!report.item(swarm::Json::copy(item), text_member(f, "line")))
          throw swarm::Error(swarm::Errc::filesystem,
                             "standard output refused the messages (a closed pipe?); nothing more was acked");
    }
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
  }
  throw SocketUnreachable(swarm::Errc::unavailable, "the run behind $SWARM_SOCKET (" + swarm::printable(path) +
                                                        ") ended before it answered");
}

std::string warn_frame(const std::string& text) {
  swarm::Json j = swarm::Json::object();
  j.set("warn", text);
  return line_of(std::move(j));
}

std::string note_frame(const std::string& text) {
  swarm::Json j = swarm::Json::object();
  j.set("note", text);
  return line_of(std::move(j));
}

std::string item_frame(const swarm::Json& doc, const std::string& line) {
  swarm::Json j = swarm::Json::object();
  j.set("item", swarm::Json::copy(doc.get())).set("line", line);
  return line_of(std::move(j));
}

std::string result_frame(const VerbResult& result) {
  swarm::Json r = swarm::Json::object();
  r.set("verb", result.verb);
  if (!result.rendered.empty()) r.set("rendered", result.rendered);
  else r.set("doc", swarm::Json::copy(result.doc.get()));
  r.set("text", result.text).set("text_is_safe", result.text_is_safe).set("exit", result.exit)
      .set("items_only", result.items_only);
  swarm::Json j = swarm::Json::object();
  j.set("result", std::move(r));
  return line_of(std::move(j));
}

std::string error_frame(swarm::Errc kind, const std::string& message) {
  swarm::Json e = swarm::Json::object();
  e.set("kind", swarm::to_string(kind)).set("message", message);
  swarm::Json j = swarm::Json::object();
  j.set("error", std::move(e));
  return line_of(std::move(j));
}

RemoteRequest read_request_line(const std::string& line) {
  const swarm::Json j = swarm::Json::parse(line);
  if (!j || !cJSON_IsObject(j.get())) throw swarm::Error(swarm::Errc::bad_input, "the request is not a JSON object");
  RemoteRequest out;
  const std::string name = text_member(j.get(), "verb");
  out.verb = typed_verb_named(name);
  if (out.verb == nullptr)
    throw swarm::Error(swarm::Errc::bad_input, "'" + swarm::printable(name) + "' is no verb this socket answers");
  out.request = request_from_json(*out.verb, member(j.get(), "arguments"), name, true);
  out.json = cJSON_IsTrue(member(j.get(), "json"));
  const cJSON* p = member(j.get(), "presentation");
  if (const cJSON* c = member(p, "columns"); cJSON_IsNumber(c) && c->valuedouble >= 0 && c->valuedouble < 100000)
    out.presentation.columns = static_cast<std::size_t>(c->valuedouble);
  out.presentation.color = cJSON_IsTrue(member(p, "color"));
  if (const cJSON* in = member(j.get(), "input"); cJSON_IsString(in)) out.input = unbase64(in->valuestring);
  return out;
}

}  // namespace cli
