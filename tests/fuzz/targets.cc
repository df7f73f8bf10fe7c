#include "fuzz/targets.h"

#include "kv/connection.h"
#include "kv/error.h"
#include "swarm/base/clock.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/json.h"
#include "swarm/base/names.h"
#include "swarm/slots/session.h"
#include "swarm/workspace/workspace.h"

namespace fuzz {

namespace {

void require(bool property, const std::string& what) {
  if (!property) throw FuzzFailure(what);
}

// Runs `parse`; a swarm::Error must be bad input, anything else is a failure.
template <typename Parse>
bool parses(Parse parse) {
  try {
    parse();
    return true;
  } catch (const swarm::Error& e) {
    require(e.kind() == swarm::Errc::bad_input, std::string("not bad input: ") + e.what());
    return false;
  }
}

bool same_time(const std::optional<swarm::TimePoint>& a, const std::optional<swarm::TimePoint>& b) { return a == b; }

}  // namespace

void duration(std::string_view input) {
  std::chrono::milliseconds d{};
  if (!parses([&] { d = swarm::parse_duration(input); })) return;
  require(d.count() >= 0, "negative duration");
  std::string text = swarm::format_duration(d);
  require(swarm::parse_duration(text) == d, "'" + text + "' does not parse back");
}

void names(std::string_view input) {
  bool slot = swarm::is_valid_slot_name(input);
  bool by_hand = !input.empty() && input.size() <= 63;
  for (std::size_t i = 0; by_hand && i < input.size(); ++i) {
    char c = input[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    by_hand = alnum || (i > 0 && (c == '_' || c == '-'));
  }
  require(slot == by_hand, "slot rule disagrees for '" + std::string(input) + "'");
  require(parses([&] { swarm::require_slot_name(input); }) == slot, "require_slot_name disagrees");
  bool lease = swarm::is_valid_lease_name(input);
  require(parses([&] { swarm::require_lease_name(input); }) == lease, "require_lease_name disagrees");
  if (lease) require(input.size() <= 255 && input.front() != '.' && input.back() != '.', "lease rule");
  parses([&] { swarm::require_task_id(input); });
}

void record(std::string_view input) {
  std::string text(input);
  swarm::ParsedSession parsed = swarm::parse_session(text);
  if (!parsed.session) {
    require(!parsed.corrupt_reason.empty(), "corrupt without a reason");
    return;
  }
  const swarm::Session& s = *parsed.session;
  require(!s.slot.empty() && !s.host.empty(), "a session without slot or host");
  std::string written = swarm::to_json(s);
  require(static_cast<bool>(swarm::Json::parse(written)), "writes invalid JSON: " + written);
  swarm::ParsedSession again = swarm::parse_session(written);
  require(again.session.has_value(), "its own record is corrupt: " + again.corrupt_reason);
  const swarm::Session& t = *again.session;
  require(t.slot == s.slot && t.host == s.host && t.host_id == s.host_id && t.task_id == s.task_id &&
              t.agent_id == s.agent_id && t.hub_url == s.hub_url && t.leaf_pid == s.leaf_pid,
          "a field changed on the way back");
  require(same_time(t.started_at, s.started_at) && same_time(t.last_renewed, s.last_renewed), "a time changed");
  require(t.unknown_fields == s.unknown_fields, "an unknown field changed");
  require(swarm::to_json(t) == written, "writing is not stable");
}

void config(std::string_view input) {
  auto file = swarm::parse_config(std::string(input), "config.json", "/hub");
  using State = swarm::Workspace::ConfigFile::State;
  if (file.state != State::good) {
    require(file.state == State::corrupt && !file.problem.empty(), "not good, and no reason");
    return;
  }
  const auto& c = file.config;
  require(c.ttl >= swarm::kMinSessionTtl && c.ttl <= swarm::kMaxSessionTtl, "TTL out of range");
  require(c.replicas >= 1 && c.replicas <= 5, "replicas out of range");
  // What save_config writes reads back the same.
  swarm::Json json = swarm::Json::object();
  json.set("nats_url", c.nats_url).set("bucket", c.bucket).set("hub", c.hub).set("embedded", c.embedded);
  json.set("ttl_ms", static_cast<std::int64_t>(c.ttl.count())).set("replicas", c.replicas);
  json.set("lease_bucket", c.lease_bucket);
  auto back = swarm::parse_config(json.dump(), "config.json", "/hub");
  require(back.state == State::good, "a good config does not read back: " + back.problem);
  require(back.config.nats_url == c.nats_url && back.config.ttl == c.ttl && back.config.hub == c.hub &&
              back.config.bucket == c.bucket && back.config.replicas == c.replicas,
          "a config changed on the way back");
}

void url(std::string_view input) {
  try {
    kv::require_valid_urls(std::string(input));
  } catch (const kv::Error& e) {
    require(e.kind() == kv::Errc::bad_request, std::string("not bad input: ") + e.what());
    return;
  }
  require(!kv::split_urls(std::string(input)).empty(), "accepted, but names no server");
}

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"duration", duration}, {"names", names}, {"record", record}, {"config", config}, {"url", url}};
  return all;
}

}  // namespace fuzz
