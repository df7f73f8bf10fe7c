#include "swarm/base/test_seam.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace swarm {

void stop_here_for_test(const char* variable, const char* stage) {
  const char* wanted = std::getenv(variable);
  if (wanted == nullptr) return;
  // One stage, or several separated by commas.
  bool named = false;
  std::string_view rest = wanted;
  while (!named && !rest.empty()) {
    const auto comma = rest.find(',');
    named = rest.substr(0, comma) == stage;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (!named) return;
  std::fprintf(stderr, "swarm: test stop at %s\n", stage);
  std::fflush(stderr);
  std::raise(SIGSTOP);
}

}  // namespace swarm
