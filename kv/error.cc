#include "kv/error.h"

#include <cstdlib>

#include "kv/nats_handles.h"

namespace kv {

std::string_view to_string(Errc kind) {
  switch (kind) {
    case Errc::not_found: return "not_found";
    case Errc::conflict: return "conflict";
    case Errc::unavailable: return "unavailable";
    case Errc::timeout: return "timeout";
    case Errc::bad_request: return "bad_request";
    case Errc::no_room: return "no_room";
    case Errc::internal: return "internal";
  }
  return "internal";
}

std::string where(std::string_view bucket, std::string_view key) {
  std::string out = "bucket ";
  out += bucket;
  if (!key.empty()) {
    out += " key ";
    out += key;
  }
  return out;
}

namespace detail {
namespace {

// nats-server 2.11+ refuses a write whose key another write with an expected
// sequence has in flight (a cluster racing two CAS writes of one key):
// "wrong last sequence" with no sequence, JetStream code 10164. Who wins is
// not known yet: it is tried again, and the key says then.
constexpr int kWrongLastSequenceInFlight = 10164;

Errc kind_of_js_code(jsErrCode code) {
  switch (static_cast<int>(code)) {
    case JSStreamWrongLastSequenceErr: return Errc::conflict;
    case kWrongLastSequenceInFlight: return Errc::unavailable;
    case JSStreamNotFoundErr:
    case JSNoMessageFoundErr: return Errc::not_found;
    case JSNotEnabledErr:
    case JSNotEnabledForAccountErr:
    // A cluster between leaders: worth a retry within the caller's timeout.
    case JSClusterIncompleteErr:
    case JSClusterNotAvailErr:
    case JSClusterNotLeaderErr:
    case JSRaftGeneralErr:
    case JSClusterNoPeersErr: return Errc::unavailable;
    case JSStreamReplicasNotSupportedErr:
    case JSStreamReplicasNotUpdatableErr:
    case JSStreamNameExistErr: return Errc::bad_request;
    default: return Errc::internal;
  }
}

Errc kind_of_status(natsStatus status, std::string_view text) {
  switch (status) {
    case NATS_TIMEOUT: return Errc::timeout;
    case NATS_NOT_FOUND: return Errc::not_found;
    case NATS_NO_SERVER:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_STALE_CONNECTION:
    case NATS_NO_RESPONDERS:
    case NATS_NOT_YET_CONNECTED:
    case NATS_IO_ERROR: return Errc::unavailable;
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT:
    case NATS_ADDRESS_MISSING:
    case NATS_INVALID_TIMEOUT:
    case NATS_MAX_PAYLOAD:
    case NATS_CONNECTION_AUTH_FAILED:
    case NATS_NOT_PERMITTED:
    case NATS_SECURE_CONNECTION_WANTED:
    case NATS_SECURE_CONNECTION_REQUIRED:
    case NATS_SSL_ERROR: return Errc::bad_request;
    default: break;
  }
  // A lost CAS race is known by its JetStream code (10071) alone, which
  // every write here reads: never by text, which a read may carry from an
  // earlier failure of its thread (a read is never a write conflict).
  if (text.find("Authorization Violation") != std::string_view::npos) return Errc::bad_request;
  // A cluster between leaders, when nats.c drops the JetStream code (consumer
  // creation does): the server's descriptions of those codes.
  for (std::string_view between_leaders : {"temporarily unavailable", "can not handle request", "incomplete results",
                                           "not assigned to this server", "no suitable peers"})
    if (text.find(between_leaders) != std::string_view::npos) return Errc::unavailable;
  return Errc::internal;
}

// "wrong last sequence: 42" -> 42; 0 when the text carries no number.
std::uint64_t revision_in(std::string_view text) {
  auto at = text.find("wrong last sequence: ");
  if (at == std::string_view::npos) return 0;
  return std::strtoull(std::string(text.substr(at + 21)).c_str(), nullptr, 10);
}

}  // namespace

std::string last_error_text(natsStatus status) {
  // nats.c keeps a thread's last error until the next one: only its text of
  // this very failure says anything (a stale "wrong last sequence" of an
  // earlier write once made a read look like a conflict).
  natsStatus last = NATS_OK;
  const char* said = nats_GetLastError(&last);
  std::string text = said != nullptr && last == status ? said : "";
  if (text.empty()) text = natsStatus_GetText(status);
  // nats.c prefixes its messages with the source location: "(conn.c:2088): ".
  if (!text.empty() && text.front() == '(') {
    auto end = text.find("): ");
    if (end != std::string::npos) text = text.substr(end + 3);
  }
  return text;
}

bool store_full(int js_code, std::string_view text) {
  switch (js_code) {
    case JSInsufficientResourcesErr:      // 10023: the server's or the account's storage limit
    case JSStorageResourcesExceededErr:   // 10047
    case JSMemoryResourcesExceededErr:    // 10028
    case JSAccountResourcesExceededErr:   // 10002
      return true;
    case JSStreamStoreFailedErr:  // 10077: the server's write failed, with the OS's reason, or a stream
                                  // that refuses new messages at its own limit (discard new)
      for (std::string_view full : {"no space left on device", "disk quota exceeded", "file too large",
                                    "maximum bytes exceeded", "maximum messages exceeded"})
        if (text.find(full) != std::string_view::npos) return true;
      return false;
    default: return false;
  }
}

Errc kind_of_failure(natsStatus status, jsErrCode js_code, std::string_view text) {
  if (store_full(js_code, text)) return Errc::no_room;
  Errc kind = js_code != 0 ? kind_of_js_code(js_code) : Errc::internal;
  return kind == Errc::internal ? kind_of_status(status, text) : kind;
}

void raise(natsStatus status, jsErrCode js_code, std::string_view what) {
  std::string text = last_error_text(status);
  Errc kind = kind_of_failure(status, js_code, text);
  std::string message(what);
  message += ": ";
  message += text;
  if (js_code != 0) message += " (JetStream error " + std::to_string(js_code) + ")";
  throw Error(kind, std::move(message), kind == Errc::conflict ? revision_in(text) : 0);
}

}  // namespace detail

bool at_own_limit(const Error& error) {
  if (error.kind() != Errc::no_room) return false;
  std::string_view text = error.what();
  return text.find("maximum bytes exceeded") != std::string_view::npos ||
         text.find("maximum messages exceeded") != std::string_view::npos;
}

}  // namespace kv
