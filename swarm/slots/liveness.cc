#include "swarm/slots/liveness.h"

#include <algorithm>

#include "swarm/base/process_info.h"
#include "swarm/lease/rules.h"

namespace swarm {

std::string_view to_string(State state) {
  switch (state) {
    case State::fresh: return "fresh";
    case State::late: return "late";
    case State::stale: return "stale";
    case State::corrupt: return "corrupt";
    case State::dead: return "dead";
  }
  return "corrupt";
}

State state_of(std::chrono::milliseconds age, std::chrono::milliseconds ttl) {
  if (age * 3 < ttl) return State::fresh;
  if (age * 3 < ttl * 2) return State::late;
  return State::stale;
}

std::chrono::milliseconds age_of(TimePoint stored_at, TimePoint now) {
  auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - stored_at);
  return age.count() < 0 ? std::chrono::milliseconds(0) : age;
}

bool run_is_gone(std::int64_t leaf_pid, std::uint64_t leaf_start, std::int64_t agent_pid, std::uint64_t agent_start) {
  // Never by a pid alone: each is judged only with its start time.
  if (agent_pid > 0 && agent_start != 0 && !process_is(static_cast<pid_t>(agent_pid), agent_start)) return true;
  return leaf_pid > 0 && leaf_start != 0 && !process_is(static_cast<pid_t>(leaf_pid), leaf_start);
}

State observed_state(std::chrono::milliseconds age, std::chrono::milliseconds ttl, std::chrono::milliseconds margin) {
  return state_of(std::max(std::chrono::milliseconds(0), age - margin), ttl);
}

std::chrono::milliseconds observer_margin(std::chrono::milliseconds ttl, std::chrono::nanoseconds uncertainty) {
  // Two readings of the server's clock, each within its own uncertainty.
  constexpr std::chrono::milliseconds kSlack{25};
  return expiry_margin(ttl, uncertainty) + kSlack;
}

}  // namespace swarm
