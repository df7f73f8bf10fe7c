#include "swarm/slots/liveness.h"

namespace swarm {

std::string_view to_string(State state) {
  switch (state) {
    case State::fresh: return "fresh";
    case State::late: return "late";
    case State::stale: return "stale";
    case State::corrupt: return "corrupt";
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

}  // namespace swarm
