#include "swarm/lease/election_state.h"

#include <cmath>

#include "kv/sha256.h"
#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/test_seam.h"
#include "swarm/base/text.h"
#include "swarm/lease/events.h"
#include "swarm/lease/lease_keys.h"

namespace swarm {

namespace {

constexpr const char* kStateRoot = "_state.";
// A CAS lost to another write of the same leader (two puts at once) is
// tried again over what it wrote, this many times.
constexpr int kPutAttempts = 3;
// Each confirmation lost to another is one that moved on: rarely more than one.
constexpr int kConfirmAttempts = 10;

std::string state_key(const std::string& name) { return kStateRoot + name; }
// The revision of the last state its writer confirmed: {"revision", "token"}.
std::string confirmed_key(const std::string& name) { return "_state_ok." + name; }

std::string digest_of(const std::string& data) {
  kv::Sha256 sha;
  sha.add(data.data(), data.size());
  return kv::hex_of(sha.finish());
}

// The stored bytes: one line of JSON (what, by whom, its digest), then the
// data as given.
std::string stored_bytes(const ElectionState& s) {
  Json head = Json::object();
  head.set("name", s.name)
      .set("token", s.token)
      .set("holder", s.holder)
      .set("host", s.host)
      .set("sha256", s.sha256)
      .set("size", static_cast<std::uint64_t>(s.data.size()))
      .set("confirm", true);
  return head.dump() + "\n" + s.data;
}

const cJSON* member(const Json& doc, const char* key) { return cJSON_GetObjectItemCaseSensitive(doc.get(), key); }

std::string text_of(const Json& doc, const char* key) {
  const cJSON* item = member(doc, key);
  return cJSON_IsString(item) ? item->valuestring : "";
}

// The stored state's header line, parsed (no tree when there is none).
Json header_of(const std::string& value) {
  const auto newline = value.find('\n');
  if (newline == std::string::npos) return {};
  return Json::parse(std::string_view(value).substr(0, newline));
}

// A whole number from 1 to 2^53, as JSON carries a token or a revision
// exactly; 0 for anything else another client may have planted (a
// fraction, a string, a number too large to be one).
std::uint64_t count_in(const cJSON* item) {
  if (!cJSON_IsNumber(item)) return 0;
  const double value = item->valuedouble;
  if (!(value >= 1 && value <= 9007199254740992.0) || value != std::floor(value)) return 0;
  return static_cast<std::uint64_t>(value);
}

// The token a header names (0: none that is a token).
std::uint64_t token_in(const Json& head) { return head ? count_in(member(head, "token")) : 0; }

// The state as stored, or corrupt naming what is wrong with it.
ElectionState parse_state(const std::string& name, const kv::Entry& entry) {
  const auto corrupt = [&](const std::string& why) {
    return Error(Errc::corrupt, "the state of election " + printable(name) + " (revision " +
                                    std::to_string(entry.revision) + ") cannot be read: " + why +
                                    "; the leader can put a new one");
  };
  const auto newline = entry.value.find('\n');
  if (newline == std::string::npos) throw corrupt("no header line");
  Json head = header_of(entry.value);
  if (!head || !cJSON_IsObject(head.get())) throw corrupt("its header is not a JSON object");
  ElectionState s;
  s.name = name;
  s.data = entry.value.substr(newline + 1);
  s.sha256 = text_of(head, "sha256");
  s.holder = text_of(head, "holder");
  s.host = text_of(head, "host");
  s.token = token_in(head);
  if (s.token == 0) throw corrupt("no token");
  s.revision = entry.revision;
  s.written_at = entry.created;
  s.to_confirm = cJSON_IsTrue(member(head, "confirm"));
  if (digest_of(s.data) != s.sha256)
    throw corrupt("its SHA-256 is not the one written with it (" + printable(s.sha256.substr(0, 64)) + ")");
  return s;
}

std::string who_leads(const std::optional<LeaseEntry>& now) {
  if (!now) return "nobody leads it now";
  if (now->corrupt()) return "its lease record is corrupt";
  return "token " + std::to_string(now->token()) + " (" + printable(now->record->holder) + " on " +
         printable(now->record->host) + ") leads it";
}

// The revision a confirmation's value names (0: not one).
std::uint64_t revision_in(const std::string& confirmation) {
  Json doc = Json::parse(confirmation);
  return doc ? count_in(member(doc, "revision")) : 0;
}

// The revision of the last state confirmed (0: none).
std::uint64_t confirmed_revision(const LeaseStore& store, const std::string& name) {
  bool released = false;
  auto last = store.keys().last(confirmed_key(name), &released);
  return last && !released ? revision_in(last->value) : 0;
}

// Confirms the state written at `revision` under `token`, unless a later
// write of the state was confirmed (a revision from ours to the state's
// own now: a number above that is none of ours, planted, and is replaced).
// By CAS: a lost race means another confirmation moved on, which the
// reread sees; bounded all the same.
void confirm_state(const LeaseStore& store, const std::string& name, std::uint64_t token, std::uint64_t revision) {
  Json doc = Json::object();
  doc.set("revision", revision).set("token", token);
  const std::string key = confirmed_key(name);
  for (int attempt = 1;; ++attempt) {
    bool released = false;
    auto last = store.keys().last(key, &released);
    if (const std::uint64_t theirs = last && !released ? revision_in(last->value) : 0; theirs >= revision) {
      bool state_released = false;
      auto state = store.keys().last(state_key(name), &state_released);
      if (state && !state_released && theirs <= state->revision) return;  // a later put confirmed its own
    }
    try {
      if (last) store.keys().update(key, doc.dump(), last->revision);
      else store.keys().create(key, doc.dump());
      return;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt == kConfirmAttempts) throw;
    }
  }
}

}  // namespace

LeaseEntry require_leader(const LeaseStore& store, const std::string& name, std::uint64_t token) {
  auto now = store.get(name);
  if (now && now->corrupt()) throw Error::corrupt_lease(name, now->corrupt_reason);
  const std::string refused = "token " + std::to_string(token) + " does not lead " + printable(name) + ": ";
  if (!now || now->token() != token) throw Error(Errc::conflict, refused + who_leads(now));
  if (standing_of(*now, std::chrono::system_clock::now()).state != LeaseState::held)
    throw Error(Errc::conflict, refused + "its lease ran out (TTL " + std::to_string(now->record->ttl.count()) +
                                    " ms) and nobody took it over yet");
  return std::move(*now);
}

ElectionState put_election_state(const LeaseStore& store, const std::string& name, std::uint64_t token,
                                 const LeaseHolder& by, std::string data) {
  if (data.size() > kMaxElectionState)
    throw Error(Errc::bad_input, "the state is " + std::to_string(data.size()) + " bytes; at most " +
                                     std::to_string(kMaxElectionState) + " are kept");
  LeaseEntry leader = require_leader(store, name, token);
  ElectionState s;
  s.name = name;
  s.token = token;
  s.holder = leader.record->holder;
  s.host = by.host;
  s.sha256 = digest_of(data);
  s.data = std::move(data);
  const std::string value = stored_bytes(s);
  const std::string key = state_key(name);
  stop_here_for_test(kLeaseStop, "state-checked");
  for (int attempt = 1;; ++attempt) {
    bool released = false;
    auto last = store.keys().last(key, &released);
    if (last && !released) {
      if (const std::uint64_t theirs = token_in(header_of(last->value)); theirs > token)
        throw Error(Errc::conflict, "a later leader (token " + std::to_string(theirs) + ") put the state of " +
                                        printable(name) + "; token " + std::to_string(token) + " leads it no longer");
    }
    try {
      s.revision = last ? store.keys().update(key, value, last->revision) : store.keys().create(key, value);
      break;
    } catch (const Error& e) {
      if (e.kind() != Errc::conflict || attempt == kPutAttempts) throw;
    }
  }
  // The lease's grant and this write are in one stream: a later grant has a
  // lower revision than this write when the lease changed hands first.
  auto after = store.get(name);
  if (!after || after->corrupt() || after->token() != token)
    throw Error(Errc::conflict, "the state of " + printable(name) + " was written (revision " +
                                    std::to_string(s.revision) + ") but token " + std::to_string(token) +
                                    " no longer leads it: " + who_leads(after) +
                                    ", and no get hands it out: it stays unconfirmed");
  confirm_state(store, name, token, s.revision);
  s.to_confirm = true;
  Event e = lease_event("elect.state", store.bucket_name(), name, {by.host, by.host_id, by.pid}, token, s.revision);
  e.detail.set("sha256", s.sha256).set("size", static_cast<std::uint64_t>(s.data.size())).set("holder", s.holder);
  store.journal().record(e);
  return s;
}

ElectionState get_election_state(const LeaseStore& store, const std::string& name, std::uint64_t token) {
  LeaseEntry leader = require_leader(store, name, token);
  bool released = false;
  auto last = store.keys().last(state_key(name), &released);
  if (!last || released)
    throw Error(Errc::not_found, "no state was put for election " + printable(name) + " (`swarm elect state " +
                                     printable(name) + " put FILE --token T` stores one)");
  ElectionState s = parse_state(name, *last);
  // Granted as revision `token`: an earlier leader's write after that was
  // made when it no longer led (its lease had run out).
  if (s.token < token && s.revision > token)
    throw Error(Errc::conflict, "the state of " + printable(name) + " was written by token " +
                                    std::to_string(s.token) + " (" + printable(s.holder) + ") after token " +
                                    std::to_string(token) + " was granted: a deposed leader's write, not handed out; "
                                    "put a new state");
  if (s.token > token)
    throw Error(Errc::conflict, "the state of " + printable(name) + " was put by a later token (" +
                                    std::to_string(s.token) + ")");
  // Its writer saw, after writing it, that it still led: no grant came
  // between its token and its revision. Unconfirmed, it may be a late write
  // of a leader deposed before it landed (one that never checked, or died
  // first): never handed out. (A state written before confirmations were
  // made has no "confirm", and only the rule above, until any state of the
  // election was confirmed: from then on an older swarm's write is refused
  // as well.)
  const std::uint64_t confirmed = confirmed_revision(store, name);
  if ((s.to_confirm || confirmed != 0) && confirmed != s.revision)
    throw Error(Errc::conflict, "the state of " + printable(name) + " (revision " + std::to_string(s.revision) +
                                    ", token " + std::to_string(s.token) + ", " + printable(s.holder) +
                                    ") was never confirmed by its writer: it may have been written after that "
                                    "leader lost the lead, or it is being written now; not handed out. Put a new "
                                    "state, or get again once a put under way has returned");
  return s;
}

}  // namespace swarm
